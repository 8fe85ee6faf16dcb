using System.Net;
using Magpie.Contracts.Changes;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Kafka;

/// <summary>The relay from the committed change log to <c>magpie.changes</c>, against a real broker.</summary>
[Collection(KafkaCollection.Name)]
public sealed class ChangeRelayTests(KafkaFixture kafka)
{
    [Fact]
    public async Task Every_committed_change_reaches_magpie_changes_in_etag_order_per_key()
    {
        // The ingest target alone, as a split deployment runs it.
        await using var magpie = await MagpieProcess.StartAsync(kafka.Broker.BootstrapServers, target: "ingest");
        var prefix = $"relay{Guid.NewGuid():N}"[..14];
        var etags = new HashSet<long>();
        for (var round = 0; round < 5; round++)
        {
            var response = await magpie.Http.BulkPutAsync(Enumerable.Range(0, 20).Select(i => ($"{prefix}/{i}", $$"""{"round":{{round}},"i":{{i}}}""")));
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            etags.UnionWith(await response.BulkEtagsAsync());
        }
        var deletes = Enumerable.Range(0, 5).Select(i => $"{prefix}/{i}").ToList();
        var del = await magpie.Http.BulkAsync("[" + string.Join(',', deletes.Select(id => $$"""{"method":"DELETE","id":"{{id}}"}""")) + "]");
        etags.UnionWith(await del.BulkEtagsAsync());

        var changes = await ChangeFeedReader.ReadUntilAsync(kafka.Broker.BootstrapServers, prefix + "/", etags, TimeSpan.FromSeconds(60));

        ChangeFeedReader.AssertEtagOrderPerKey(changes);
        var latest = changes.GroupBy(c => c.Id).ToDictionary(g => g.Key, g => g.MaxBy(c => c.Etag)!);
        Assert.Equal(20, latest.Count);
        foreach (var id in deletes)
        {
            Assert.Equal(ChangeOp.Delete, latest[id].Op);
            Assert.Null(latest[id].Document);
            Assert.Equal(prefix, latest[id].Collection);
        }
        var kept = latest[$"{prefix}/7"];
        Assert.Equal(ChangeOp.Put, kept.Op);
        Assert.Equal(4, kept.Document!.Value.GetProperty("round").GetInt32());
        Assert.Equal(prefix, kept.Collection);
        Assert.True(kept.LastModified > DateTimeOffset.UtcNow.AddMinutes(-5));
    }

    [Fact]
    public async Task A_kill_9_before_the_relay_caught_up_loses_no_change()
    {
        await using var magpie = await MagpieProcess.StartAsync(kafka.Broker.BootstrapServers);
        var prefix = $"relaycrash{Guid.NewGuid():N}"[..18];
        var etags = new HashSet<long>();
        for (var round = 0; round < 10; round++)
        {
            var response = await magpie.Http.BulkPutAsync(Enumerable.Range(0, 128).Select(i => ($"{prefix}/{i}", $$"""{"round":{{round}}}""")));
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            etags.UnionWith(await response.BulkEtagsAsync());
        }
        magpie.Crash();   // acknowledged, perhaps not yet published: the relay must resume from its persisted position
        await magpie.StartAsync();
        var after = await magpie.Http.BulkPutAsync(Enumerable.Range(0, 10).Select(i => ($"{prefix}/after-{i}", "{}")));
        etags.UnionWith(await after.BulkEtagsAsync());

        var changes = await ChangeFeedReader.ReadUntilAsync(kafka.Broker.BootstrapServers, prefix + "/", etags, TimeSpan.FromSeconds(60));
        ChangeFeedReader.AssertEtagOrderPerKey(changes);
    }
}
