using System.Net;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Kafka;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Kafka;

/// <summary>
/// A Kafka that requires SASL/SCRAM (a broker of this test's own, with a SCRAM user made at format time): every client
/// Magpie makes to it — input consumer, relay, index definitions, indexers, queries, readiness — takes the credentials
/// from <c>Magpie:KafkaClient</c>; a wrong password turns /readyz 503 and never shows in the log.
/// </summary>
public sealed class KafkaSecurityTests
{
    [Fact]
    public async Task Every_kafka_client_uses_the_configured_scram_credentials()
    {
        const string password = "kafka-s3cret";
        await using var broker = await LocalKafka.StartAsync(FreePort.Next(), ("magpie", password));
        var settings = new Dictionary<string, string>
        {
            ["security.protocol"] = "SASL_PLAINTEXT", ["sasl.mechanism"] = "SCRAM-SHA-256", ["sasl.username"] = "magpie", ["sasl.password"] = password,
        };
        await using var magpie = await MagpieProcess.StartAsync(broker.BootstrapServers,
            environment: settings.ToDictionary(kv => $"MAGPIE__KAFKACLIENT__{kv.Key}", kv => kv.Value));
        await Eventually(async () => (await magpie.Http.GetAsync("readyz")).IsSuccessStatusCode, "readyz never turned ready");

        // Over HTTP → store → relay → magpie.changes, read back with the same credentials.
        var put = await magpie.Http.PutAsync("users/1", """{"Name":"Ada"}""");
        Assert.Equal(HttpStatusCode.Created, put.StatusCode);
        var etag = (await put.JsonAsync()).GetProperty("etag").GetInt64();
        KafkaClients.UseCluster(broker.BootstrapServers, settings);
        var changes = await ChangeFeedReader.ReadUntilAsync(broker.BootstrapServers, "users/1", new HashSet<long> { etag }, TimeSpan.FromSeconds(60));
        Assert.Contains(changes, c => c.Id == "users/1" && c.Etag == etag);

        // magpie.documents → store, and an index built from the change topic answers a query.
        using (var producer = KafkaClients.BuildProducer<string, string>(KafkaClients.Producer(broker.BootstrapServers, "test")))
            await producer.ProduceAsync(Topics.Documents, new Message<string, string> { Key = "users/2", Value = """{"Name":"Bo"}""" });
        await Eventually(async () => (await magpie.Http.GetAsync("docs/users/2")).StatusCode == HttpStatusCode.OK, "the topic's document never landed");
        await magpie.Http.PutIndexAsync("Users/ByName", """{"maps":["map('users', u => ({ Name: u.Name }))"]}""");
        var found = await magpie.Http.QueryNonStaleAsync("from index 'Users/ByName' where Name = 'Bo'");
        Assert.Equal(1, found.GetProperty("totalResults").GetInt64());

        // A wrong password: the ingest target starts but is not ready, saying Kafka is the problem; an indexer, which needs Kafka
        // to start, stops with one line. The password is nowhere in either's output.
        settings["sasl.password"] = "wrong-password";
        var wrong = settings.ToDictionary(kv => $"MAGPIE__KAFKACLIENT__{kv.Key}", kv => kv.Value);
        await using var ingest = await MagpieProcess.StartAsync(broker.BootstrapServers, target: "ingest", environment: wrong);
        await Task.Delay(TimeSpan.FromSeconds(5));
        var ready = await ingest.Http.GetAsync("readyz");
        Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
        Assert.Contains("kafka", await ready.Content.ReadAsStringAsync(), StringComparison.OrdinalIgnoreCase);
        var indexer = await Assert.ThrowsAsync<InvalidOperationException>(() => MagpieProcess.StartAsync(broker.BootstrapServers, target: "indexer", environment: wrong));
        Assert.Contains("exited with 1", indexer.Message);
        Assert.Contains($"magpie: Kafka at {broker.BootstrapServers} did not answer at start", indexer.Message);
        Assert.DoesNotContain("wrong-password", indexer.Message);
        Assert.DoesNotContain(magpie.Output.Concat(ingest.Output), l => l.Contains(password) || l.Contains("wrong-password"));
    }

    private static async Task Eventually(Func<Task<bool>> condition, string message)
    {
        var deadline = DateTime.UtcNow.AddSeconds(90);
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < deadline, message);
            await Task.Delay(250);
        }
    }
}
