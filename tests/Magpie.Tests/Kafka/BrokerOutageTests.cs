using System.Collections.Concurrent;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Kafka;

/// <summary>Kafka down ≠ writes down: the broker is stopped in the middle of a load and started again.</summary>
[Collection(KafkaCollection.Name)]
public sealed class BrokerOutageTests
{
    [Fact]
    public async Task Writes_are_acknowledged_while_kafka_is_down_and_every_change_arrives_after_it_returns()
    {
        await using var broker = await KafkaBroker.StartOwnedAsync();   // this test stops it, so it is ours
        await using var magpie = await MagpieProcess.StartAsync(broker.BootstrapServers);
        var prefix = $"outage{Guid.NewGuid():N}"[..14];
        var etags = new ConcurrentBag<long>();
        var phase = "before";
        var ackedWhileDown = 0;
        using var stop = new CancellationTokenSource();
        var writer = Task.Run(async () =>
        {
            for (var batch = 0; !stop.IsCancellationRequested; batch++)
            {
                using var response = await magpie.Http.BulkPutAsync(Enumerable.Range(0, 20).Select(i => ($"{prefix}/{i}", $$"""{"batch":{{batch}}}""")));
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
                foreach (var etag in await response.BulkEtagsAsync()) etags.Add(etag);
                if (phase == "down") Interlocked.Increment(ref ackedWhileDown);
                await Task.Delay(20);
            }
        });

        await Task.Delay(TimeSpan.FromSeconds(3));
        await broker.StopAsync();
        phase = "down";
        await Task.Delay(TimeSpan.FromSeconds(6));
        phase = "after";
        await broker.RestartAsync();
        await Task.Delay(TimeSpan.FromSeconds(3));
        stop.Cancel();
        await writer;   // surfaces any failed write first

        Assert.True(ackedWhileDown > 10, $"only {ackedWhileDown} batches were acknowledged while Kafka was down");
        List<Magpie.Contracts.Changes.ChangeEvent> changes;
        try { changes = await ChangeFeedReader.ReadUntilAsync(broker.BootstrapServers, prefix + "/", etags.ToHashSet(), TimeSpan.FromSeconds(120)); }
        catch (Xunit.Sdk.XunitException e)
        {
            // Whether the relay or the reader is behind, and what the relay said, decide where to look.
            var relay = await magpie.Http.GetStringAsync("stats/pipeline");
            var said = magpie.Output.Where(l => l.Contains("relay", StringComparison.OrdinalIgnoreCase) || l.Contains("librdkafka")).TakeLast(60);
            throw new Xunit.Sdk.XunitException($"{e.Message}\n/stats/pipeline: {relay}\nmagpie said:\n{string.Join('\n', said)}");
        }
        ChangeFeedReader.AssertEtagOrderPerKey(changes);

        // The relay reports itself caught up once Kafka confirmed everything.
        var deadline = DateTime.UtcNow.AddSeconds(30);
        long lag;
        while (true)
        {
            var relay = (await magpie.Http.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("relay");
            Assert.True(relay.GetProperty("published").GetInt64() >= etags.Count);
            lag = relay.GetProperty("lagEtags").GetInt64();
            if (lag == 0 || DateTime.UtcNow > deadline) break;
            await Task.Delay(200);
        }
        Assert.Equal(0, lag);
    }
}
