using System.Net;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using Magpie.Security;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Magpie.Hosting.Security;

/// <summary>
/// Who may reach this process and how, decided once at start from the settings: the address it listens on (loopback unless
/// told otherwise), the API keys, the TLS certificate (HTTP and PostgreSQL alike), and the key it sends to the other processes
/// of a split deployment. RavenDB's rule: listening beyond loopback with no key refuses to start unless <c>--unsecured</c>.
/// </summary>
public sealed class HostSecurity
{
    private HostSecurity(MagpieSettings settings, ApiKeyStore keys, X509Certificate2? certificate, IPAddress? address, string? serviceKey)
    {
        Settings = settings;
        Keys = keys;
        Certificate = certificate;
        Address = address;
        ServiceKey = serviceKey;
    }

    private MagpieSettings Settings { get; }
    public ApiKeyStore Keys { get; }
    public X509Certificate2? Certificate { get; }

    /// <summary>null = loopback (IPv4 and IPv6).</summary>
    public IPAddress? Address { get; }
    public string? ServiceKey { get; }

    public bool Loopback => Address is null || IPAddress.IsLoopback(Address);

    /// <summary>Keys are checked even when none exists (every request is then refused): listening beyond loopback without --unsecured.</summary>
    public bool KeysRequiredWithoutKeys => !Loopback && !Settings.Unsecured;

    public string Scheme => Certificate is null ? "http" : "https";

    /// <exception cref="ModuleUnmetException">a setting that can't be used: one line, and the start stops.</exception>
    /// <param name="callsIndexers">The target's modules call indexer processes over HTTP (a query or an ingest without its indexer, Kafka mode).</param>
    public static HostSecurity From(MagpieSettings s, bool callsIndexers)
    {
        var keys = Unmet(() => new ApiKeyStore(s.KeysFile ?? ApiKeyStore.DefaultPath(Path.GetFullPath(s.DataDir))), "the API key file");
        var certificate = s.Tls.Certificate is { } cert
            ? Unmet(() => X509Certificate2.CreateFromPemFile(cert, s.Tls.Key), $"the TLS certificate {cert}")
            : null;
        var serviceKey = s.ServiceKey ?? (s.ServiceKeyFile is { } file ? Unmet(() => File.ReadAllText(file).Trim(), $"the service key file {file}") : null);
        var security = new HostSecurity(s, keys, certificate, ParseAddress(s.BindAddress), serviceKey);
        if (!security.Loopback && !keys.Any && !s.Unsecured)
            throw new ModuleUnmetException($"refusing to listen on {s.BindAddress} with no API key: anyone who reaches it could read, write and run scripts. " +
                $"Create a key first (magpie keys create --role admin --data-dir {s.DataDir}), or pass --unsecured to accept that");
        // Calls between processes carry a key once keys are checked (query → indexers, ingest → indexers when asked to wait).
        if (callsIndexers && (keys.Any || security.KeysRequiredWithoutKeys) && serviceKey is null)
            throw new ModuleUnmetException("API keys are on, and this process calls the indexers: give it a key for that " +
                "(Magpie:ServiceKeyFile, or MAGPIE__SERVICEKEY; a key with the read role is enough)");
        return security;
    }

    /// <summary>Kestrel's endpoint: the address, HTTPS when a certificate is set.</summary>
    public void Listen(KestrelServerOptions kestrel, int port)
    {
        void Configure(ListenOptions o)
        {
            if (Certificate is { } c) o.UseHttps(c);
            // After TLS, so it reads the plain HTTP Kestrel writes.
            o.UseProblemBodies(kestrel.Limits);
        }
        if (Address is null) kestrel.ListenLocalhost(port, Configure);
        else kestrel.Listen(Address, port, Configure);
    }

    /// <summary>The PostgreSQL endpoint listens where HTTP does (IPv4 loopback for "localhost").</summary>
    public IPAddress PgAddress => Address ?? IPAddress.Loopback;

    /// <summary>
    /// An HTTP client for the other processes of the deployment: sends the service key, and trusts this deployment's own
    /// certificate (a split deployment commonly shares one self-signed certificate) besides what the system trusts.
    /// </summary>
    public HttpClient PeerClient(TimeSpan timeout)
    {
        var own = Certificate?.GetCertHashString();
        var handler = new SocketsHttpHandler
        {
            SslOptions = new SslClientAuthenticationOptions
            {
                RemoteCertificateValidationCallback = (_, remote, _, errors) =>
                    errors == SslPolicyErrors.None || own is not null && remote is not null && remote.GetCertHashString() == own,
            },
        };
        var client = new HttpClient(handler) { Timeout = timeout };
        if (ServiceKey is { } key) client.DefaultRequestHeaders.Authorization = new("Bearer", key);
        return client;
    }

    /// <summary>Where other processes reach this one unless told (Magpie:AdvertisedUrl): on loopback only this machine can, as localhost.</summary>
    public static string DefaultUrl(MagpieSettings s)
    {
        var address = ParseAddress(s.BindAddress);
        var host = address is null || IPAddress.IsLoopback(address) ? "localhost" : Dns.GetHostName();
        return $"{(s.Tls.Certificate is null ? "http" : "https")}://{host}:{s.HttpPort}";
    }

    private static IPAddress? ParseAddress(string bind) => bind.Trim().ToLowerInvariant() switch
    {
        "" or "localhost" or "loopback" => null,
        "*" or "any" => IPAddress.Any,
        var a when IPAddress.TryParse(a, out var ip) => ip,
        _ => throw new ModuleUnmetException($"Magpie:BindAddress '{bind}' is not an IP address (or localhost, or * for every interface)"),
    };

    private static T Unmet<T>(Func<T> load, string what)
    {
        try { return load(); }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or InvalidDataException or System.Security.Cryptography.CryptographicException or ArgumentException)
        {
            throw new ModuleUnmetException($"cannot use {what}: {e.Message}");
        }
    }
}
