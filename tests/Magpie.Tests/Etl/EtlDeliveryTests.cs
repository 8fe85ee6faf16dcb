using System.Collections.Concurrent;
using System.Text;
using System.Text.Json;
using Confluent.Kafka;
using Magpie.Kafka;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Xunit.Abstractions;

namespace Magpie.Tests.Etl;

/// <summary>
/// The split deployment: an ingest process relaying to Kafka and a separate `--target sinks` process
/// reading magpie.changes, publishing to a real RabbitMQ (and to Kafka topics).
/// </summary>
[Collection(Fixtures.KafkaCollection.Name)]
public sealed class EtlDeliveryTests(KafkaFixture kafka, ITestOutputHelper output)
{
    private readonly string _n = Guid.NewGuid().ToString("N")[..8];

    [Fact]
    public async Task Every_final_version_reaches_the_queue_through_a_sinks_kill_9_and_a_20_second_RabbitMQ_outage()
    {
        await using var rabbit = await RabbitMqBroker.StartOwnedAsync();
        await using var ingest = await MagpieProcess.StartAsync(kafka.Broker.BootstrapServers, target: "ingest");
        await using var sinks = await MagpieProcess.StartAsync(kafka.Broker.BootstrapServers, target: "sinks");
        await using var queue = await QueueReader.StartAsync(rabbit.Url, $"loads-q{_n}", $"Loads{_n}");
        try
        {
            await sinks.Http.PutConnectionAsync("rabbit", new { type = "rabbitmq", url = rabbit.Url });
            await sinks.Http.PutTaskAsync("loads", new
            {
                connection = "rabbit",
                reconnect = new { initialDelayMs = 500, maxDelayMs = 4000 },
                transforms = new[] { new { collections = new[] { $"Loads{_n}" }, script = $"loadToLoads{_n}({{ Id: id(this), Round: this.Round }});" } },
            });

            // 40 rounds of 100 writes over 1,000 documents: every document is written 4 times; only its last etag must arrive.
            var finalEtag = new ConcurrentDictionary<string, long>();
            var round = 0;
            var writer = Task.Run(async () =>
            {
                for (; round < 40; round++)
                {
                    var docs = Enumerable.Range(0, 100).Select(i => ($"loads{_n}/{(round * 100 + i) % 1000}", $$"""{"Round": {{round}}}""")).ToList();
                    var etags = await (await ingest.Http.BulkPutAsync(docs)).BulkEtagsAsync();
                    for (var i = 0; i < docs.Count; i++) finalEtag[docs[i].Item1] = etags[i];
                    await Task.Delay(150);
                }
            });
            async Task UntilRound(int r) { while (Volatile.Read(ref round) < r && !writer.IsCompleted) await Task.Delay(20); }

            await UntilRound(8);
            sinks.Crash();
            output.WriteLine($"sinks killed at round {round}");
            await sinks.StartAsync();
            await UntilRound(16);
            await rabbit.StopAsync();
            output.WriteLine($"RabbitMQ stopped at round {round}");
            var outage = await sinks.Http.WaitForStatsAsync("loads", s => s.GetProperty("state").GetString() == "reconnecting", TimeSpan.FromSeconds(30));
            await Task.Delay(TimeSpan.FromSeconds(20));
            await rabbit.RestartAsync();
            output.WriteLine($"RabbitMQ back at round {round}");
            await writer;

            var expected = finalEtag.ToDictionary(kv => $"{kv.Key}@{kv.Value}", kv => kv.Key);
            var received = await queue.WaitForAsync(r => expected.Keys.All(new HashSet<string>(r.Select(m => m.MessageId!)).Contains), TimeSpan.FromSeconds(120));

            // Caught up: running, and nothing left in magpie.changes (lag = high watermarks − position).
            var stats = await sinks.Http.WaitForStatsAsync("loads", s => s.GetProperty("state").GetString() == "running"
                && s.GetProperty("lag").ValueKind == JsonValueKind.Number && s.GetProperty("lag").GetInt64() == 0, TimeSpan.FromSeconds(30));
            var byId = received.GroupBy(m => m.MessageId!).ToList();
            var duplicates = byId.Sum(g => g.Count() - 1);
            output.WriteLine($"writes 4000, documents {expected.Count}, messages received {received.Count}, distinct message ids {byId.Count}, duplicates {duplicates}, reconnects {stats.GetProperty("reconnects")}");
            Assert.Equal(1000, expected.Count);
            Assert.Contains("unreachable", outage.GetProperty("lastError").GetString() + " " + (await sinks.Http.TaskStatsAsync("loads")).GetProperty("recentErrors"));
            Assert.True(stats.GetProperty("reconnects").GetInt64() >= 1);
            // Every message is a real write: its id names a document and an etag the ingest process acknowledged, and the body agrees.
            Assert.All(byId, g =>
            {
                var body = JsonDocument.Parse(g.First().Body).RootElement;
                Assert.Equal(g.Key[..g.Key.IndexOf('@')], body.GetProperty("Id").GetString());
                Assert.All(g, m => Assert.Equal(g.First().Body, m.Body));
            });
        }
        catch
        {
            // What the sinks process logged is what tells a broker that stayed silent from a client that hung.
            output.WriteLine("sinks log:\n" + string.Join('\n', sinks.Output));
            throw;
        }
    }

    [Fact]
    public async Task A_task_with_a_Kafka_connection_publishes_keyed_CloudEvents_to_a_topic()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var topic = $"etl.orders.{_n}";
        await magpie.Http.PutConnectionAsync("kafka", new { type = "kafka", bootstrapServers = kafka.Broker.BootstrapServers, options = new Dictionary<string, string> { ["linger.ms"] = "1" } });
        await magpie.Http.PutTaskAsync("orders", new
        {
            connection = "kafka",
            transforms = new[] { new { collections = new[] { "Orders" }, script = $"loadTo('{topic}', {{ Total: this.Total }}, {{ type: 'shop.order' }});" } },
        });
        var put = (await magpie.Http.PutAsync("orders/1", """{"Total": 12}""")).EtagHeader();
        var deleted = await magpie.Http.DeleteAsync("orders/1", null);

        var config = KafkaClients.Consumer(kafka.Broker.BootstrapServers, $"etl-test-{_n}");
        config.TopicMetadataRefreshIntervalMs = 500; // notice the topic soon once the task has created it
        using var consumer = KafkaClients.BuildConsumer<string, byte[]>(config);
        consumer.Subscribe(topic);
        var got = new List<ConsumeResult<string, byte[]>>();
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (got.Count < 2 && DateTime.UtcNow < deadline)
        {
            try
            {
                if (consumer.Consume(TimeSpan.FromMilliseconds(500)) is { IsPartitionEOF: false } r) got.Add(r);
            }
            catch (ConsumeException e) when (e.Error.Code == ErrorCode.UnknownTopicOrPart)
            {
                // The task creates the topic on its first delivery; subscribing may beat it. Keep polling.
            }
        }
        consumer.Close();

        string H(ConsumeResult<string, byte[]> r, string name) => Encoding.UTF8.GetString(r.Message.Headers.GetLastBytes(name));
        Assert.Equal(2, got.Count);
        Assert.All(got, r => Assert.Equal("orders/1", r.Message.Key));
        Assert.Equal(("""{"Total":12}""", $"orders/1@{put}", "shop.order"), (Encoding.UTF8.GetString(got[0].Message.Value), H(got[0], "ce_id"), H(got[0], "ce_type")));
        Assert.Equal(("1.0", "/magpie/etl/orders", "orders/1", "application/json"), (H(got[0], "ce_specversion"), H(got[0], "ce_source"), H(got[0], "ce_subject"), H(got[0], "content-type")));
        Assert.Equal(($"orders/1@{deleted.EtagHeader()}", """{"id":"orders/1","collection":"orders"}"""), (H(got[1], "ce_id"), Encoding.UTF8.GetString(got[1].Message.Value)));
        Assert.Equal("magpie.etl.delete", H(got[1], "ce_type")); // the default delete message says what it is
    }
}
