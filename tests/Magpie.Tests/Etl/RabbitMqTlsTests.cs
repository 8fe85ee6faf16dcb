using System.Net;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Etl;

/// <summary>
/// ETL to a RabbitMQ that speaks TLS (an <c>amqps://</c> connection URL): delivered when Magpie trusts the broker's
/// certificate (here a test CA given to OpenSSL through <c>SSL_CERT_FILE</c>, as an operator adds a CA to the system
/// store), refused — not sent in clear — when it does not, with the reason in the task's stats.
/// </summary>
public sealed class RabbitMqTlsTests
{
    [Fact]
    public async Task An_amqps_connection_delivers_over_tls_and_refuses_a_broker_it_does_not_trust()
    {
        var certificate = TestCertificate.Create();
        await using var rabbit = await LocalRabbitMq.StartAsync(FreePort.Next(), certificate);
        await using var queue = await QueueReader.StartAsync(rabbit.Url, "tls-orders-q", "tls-orders");
        var task = new
        {
            connection = "rabbit",
            transforms = new[] { new { collections = new[] { "Orders" }, script = "loadTo('tls-orders', { Id: id(this), Total: this.Total });" } },
        };
        var amqps = new { type = "rabbitmq", url = $"amqps://guest:guest@localhost:{rabbit.TlsPort}/" };

        await using (var trusting = await MagpieProcess.StartAsync(environment: new() { ["SSL_CERT_FILE"] = certificate.CertificatePath }))
        {
            await trusting.Http.PutConnectionAsync("rabbit", amqps);
            await trusting.Http.PutTaskAsync("orders", task);
            Assert.Equal(HttpStatusCode.Created, (await trusting.Http.PutAsync("orders/1", """{"Total":250}""")).StatusCode);
            var received = await queue.WaitForAsync(r => r.Count >= 1, TimeSpan.FromSeconds(60));
            Assert.Contains(received, m => m.Body.Contains("\"Total\":250"));
        }

        await using var wary = await MagpieProcess.StartAsync();
        await wary.Http.PutConnectionAsync("rabbit", amqps);
        await wary.Http.PutTaskAsync("orders", task);
        Assert.Equal(HttpStatusCode.Created, (await wary.Http.PutAsync("orders/2", """{"Total":99}""")).StatusCode);
        var stats = await wary.Http.WaitForStatsAsync("orders", s => s.GetProperty("lastError").GetString() is { Length: > 0 }, TimeSpan.FromSeconds(60));
        Assert.Equal(0, stats.GetProperty("messagesSent").GetInt64());
        await Task.Delay(2000);
        Assert.DoesNotContain(await queue.WaitForAsync(_ => true, TimeSpan.FromSeconds(1)), m => m.Body.Contains("\"Total\":99"));
    }
}
