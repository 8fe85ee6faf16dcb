using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Kafka;

/// <summary>A relay producer that gets nowhere while Kafka answers is replaced, and nothing it held is lost.</summary>
[Collection(KafkaCollection.Name)]
public sealed class RelayStallTests
{
    [Fact]
    public async Task A_relay_connection_gone_silent_while_kafka_answers_gets_a_new_producer_and_every_change_arrives()
    {
        // A broker of our own behind a proxy: clients reach it only through the proxy, which can leave their open connections
        // hanging (no bytes, no reset) while new ones get through: a half-dead connection, as after a network fault.
        var (brokerPort, proxyPort) = (FreePort.Next(), FreePort.Next());
        await using var broker = await LocalKafka.StartAsync(brokerPort, advertisedPort: proxyPort);
        await using var proxy = new TcpProxy(proxyPort, brokerPort);
        var servers = $"127.0.0.1:{proxyPort}";
        await using var magpie = await MagpieProcess.StartAsync(servers, target: "ingest", environment: new() { ["MAGPIE__RELAYSTALLSECONDS"] = "3" });
        var prefix = $"stall{Guid.NewGuid():N}"[..14];
        var etags = new HashSet<long>();
        await WriteAsync(magpie, prefix, 0, etags);
        await WaitForAsync(magpie, r => r.GetProperty("lagEtags").GetInt64() == 0, TimeSpan.FromSeconds(60));

        proxy.FreezeOpenConnections();
        for (var round = 1; round <= 5; round++) await WriteAsync(magpie, prefix, round, etags);   // still acknowledged

        // librdkafka would give up on the silent connection only after socket.timeout.ms (60 s); the relay does not wait for that.
        var relay = await WaitForAsync(magpie, r => r.GetProperty("lagEtags").GetInt64() == 0, TimeSpan.FromSeconds(45));
        Assert.True(relay.GetProperty("producerRebuilds").GetInt64() >= 1, relay.ToString());
        Assert.Contains(magpie.Output, l => l.Contains("no delivery report for 3 s while Kafka answers for magpie.changes"));
        var changes = await ChangeFeedReader.ReadUntilAsync(servers, prefix + "/", etags, TimeSpan.FromSeconds(60));
        ChangeFeedReader.AssertEtagOrderPerKey(changes);
    }

    private static async Task WriteAsync(MagpieProcess magpie, string prefix, int round, HashSet<long> etags)
    {
        using var response = await magpie.Http.BulkPutAsync(Enumerable.Range(0, 20).Select(i => ($"{prefix}/{i}", $$"""{"round":{{round}}}""")));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        etags.UnionWith(await response.BulkEtagsAsync());
    }

    private static async Task<JsonElement> WaitForAsync(MagpieProcess magpie, Func<JsonElement, bool> done, TimeSpan timeout)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (true)
        {
            var relay = (await magpie.Http.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("relay");
            if (done(relay)) return relay;
            Assert.True(DateTime.UtcNow < deadline, $"the relay did not get there within {timeout.TotalSeconds:N0} s: {relay}\n"
                + string.Join('\n', magpie.Output.Where(l => l.Contains("relay")).TakeLast(20)));
            await Task.Delay(200);
        }
    }
}
