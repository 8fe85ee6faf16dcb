using System.Net;
using System.Net.NetworkInformation;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Npgsql;

namespace Magpie.Tests.Security;

/// <summary>
/// Where Magpie listens and how: loopback only by default; beyond loopback only with an API key (or --unsecured, which warns);
/// HTTPS and PostgreSQL TLS from one PEM certificate.
/// </summary>
public sealed class ListeningTests
{
    [Fact]
    public async Task Magpie_listens_on_loopback_only_and_refuses_to_listen_wider_without_a_key()
    {
        var outside = NonLoopbackAddress();
        await using (var local = await MagpieProcess.StartAsync())
        {
            Assert.Equal(HttpStatusCode.OK, (await local.Http.GetAsync("health")).StatusCode);
            foreach (var port in new[] { local.Port, local.PgPort })
                await Assert.ThrowsAsync<SocketException>(async () => { using var tcp = new TcpClient(); await tcp.ConnectAsync(outside, port); });
        }

        var refused = await Assert.ThrowsAsync<InvalidOperationException>(() => MagpieProcess.StartAsync(environment: new() { ["MAGPIE__BINDADDRESS"] = "0.0.0.0" }));
        Assert.Contains("exited with 1", refused.Message);
        Assert.Contains("refusing to listen on 0.0.0.0 with no API key", refused.Message);
        Assert.Contains("magpie keys create --role admin", refused.Message);
        Assert.DoesNotContain("   at ", refused.Message);   // one line, no stack trace

        await using (var unsecured = await MagpieProcess.StartAsync(environment: new() { ["MAGPIE__BINDADDRESS"] = "0.0.0.0", ["MAGPIE__UNSECURED"] = "true" }))
        {
            using var fromOutside = new HttpClient { BaseAddress = new Uri($"http://{outside}:{unsecured.Port}/") };
            Assert.Equal(HttpStatusCode.Created, (await fromOutside.PutAsync("users/1", "{}")).StatusCode);
            Assert.Contains(unsecured.Output, l => l.Contains("--unsecured") && l.Contains("anyone who reaches port"));
        }

        var dataDir = Directory.CreateTempSubdirectory("magpie-bind-").FullName;
        var key = await TestKeys.CreateAsync(dataDir, "write", "app");
        await using var secured = await MagpieProcess.StartAsync(dataDir: dataDir, environment: new() { ["MAGPIE__BINDADDRESS"] = "0.0.0.0" });
        using var client = new HttpClient { BaseAddress = new Uri($"http://{outside}:{secured.Port}/") };
        await HttpJson.AssertProblem(await client.PutAsync("users/1", "{}"), HttpStatusCode.Unauthorized, "needs a key with the write role");
        client.DefaultRequestHeaders.Authorization = new("Bearer", key);
        Assert.Equal(HttpStatusCode.Created, (await client.PutAsync("users/1", "{}")).StatusCode);
    }

    [Fact]
    public async Task Https_and_postgresql_tls_serve_the_configured_pem_certificate()
    {
        var certificate = TestCertificate.Create();
        await using var magpie = await MagpieProcess.StartAsync(environment: certificate.Environment());
        string? seen = null;
        using var https = new HttpClient(new HttpClientHandler
        {
            ServerCertificateCustomValidationCallback = (_, cert, _, _) => { seen = cert?.GetCertHashString(); return seen == certificate.Thumbprint; },
        });
        Assert.Equal(HttpStatusCode.Created, (await https.SendAsync(new HttpRequestMessage(HttpMethod.Put, $"https://127.0.0.1:{magpie.Port}/docs/users/1")
        {
            Content = HttpJson.Json("""{"Name":"Ada"}"""),
        })).StatusCode);
        Assert.Equal(certificate.Thumbprint, seen);
        // Plain HTTP on the HTTPS port gets nothing.
        using var plain = new HttpClient { Timeout = TimeSpan.FromSeconds(10) };
        var plainAnswer = await Record.ExceptionAsync(async () => Assert.NotEqual(HttpStatusCode.OK, (await plain.GetAsync($"http://127.0.0.1:{magpie.Port}/docs/users/1")).StatusCode));
        Assert.True(plainAnswer is null or HttpRequestException, plainAnswer?.ToString());

        // The PostgreSQL endpoint verifies against the same certificate (verify-full: chain and host name).
        await using var db = new NpgsqlConnection($"Host=localhost;Port={magpie.PgPort};Username=grafana;Database=magpie;Pooling=false;" +
            $"SSL Mode=VerifyFull;Root Certificate={certificate.CertificatePath};Server Compatibility Mode=NoTypeLoading");
        await db.OpenAsync();
        await using var cmd = new NpgsqlCommand("SELECT 1", db);
        Assert.Equal(1, await cmd.ExecuteScalarAsync());
    }

    private static IPAddress NonLoopbackAddress() =>
        NetworkInterface.GetAllNetworkInterfaces().Where(n => n.OperationalStatus == OperationalStatus.Up)
            .SelectMany(n => n.GetIPProperties().UnicastAddresses).Select(a => a.Address)
            .First(a => a.AddressFamily == AddressFamily.InterNetwork && !IPAddress.IsLoopback(a));
}
