using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Magpie.Tests.Fixtures;

/// <summary>A self-signed certificate for localhost as PEM files, the way an operator hands Magpie one (Magpie:Tls).</summary>
public sealed record TestCertificate(string CertificatePath, string KeyPath, string Thumbprint)
{
    public static TestCertificate Create()
    {
        var dir = Directory.CreateTempSubdirectory("magpie-tls-").FullName;
        using var rsa = RSA.Create(2048);
        var request = new CertificateRequest("CN=localhost", rsa, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
        var names = new SubjectAlternativeNameBuilder();
        names.AddDnsName("localhost");
        names.AddIpAddress(System.Net.IPAddress.Loopback);
        request.CertificateExtensions.Add(names.Build());
        using var cert = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(30));
        var certPath = Path.Combine(dir, "magpie.crt");
        var keyPath = Path.Combine(dir, "magpie.key");
        File.WriteAllText(certPath, cert.ExportCertificatePem());
        File.WriteAllText(keyPath, rsa.ExportPkcs8PrivateKeyPem());
        return new TestCertificate(certPath, keyPath, cert.GetCertHashString());
    }

    public Dictionary<string, string> Environment() => new()
    {
        ["MAGPIE__TLS__CERTIFICATE"] = CertificatePath,
        ["MAGPIE__TLS__KEY"] = KeyPath,
    };
}
