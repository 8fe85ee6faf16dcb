using System.Net;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Documents;

/// <summary>
/// Compaction in a running Magpie: an index reading all along stays right, an index defined after the log was compacted
/// builds from the copies (every live document once, nothing deleted), revisions keep what was asked, and all of it
/// survives kill -9.
/// </summary>
public sealed class CompactionOverHttpTests
{
    [Fact]
    public async Task Indexes_and_revisions_are_right_after_the_log_is_compacted_and_after_kill_9()
    {
        await using var magpie = await MagpieProcess.StartAsync(environment: new()
        {
            ["MAGPIE__COMPACTION__INTERVALSECONDS"] = "1",
            ["MAGPIE__COMPACTION__MINMEGABYTES"] = "0",
            ["MAGPIE__COMPACTION__REVISIONS"] = "2",
        });
        var http = magpie.Http;
        await http.PutIndexAsync("Items/ByGroup", """{"maps":["map('Items', i => ({ Group: i.Group, V: i.V }))"]}""");
        for (var v = 1; v <= 3; v++)
            (await http.BulkPutAsync(Enumerable.Range(1, 300).Select(n => ($"items/{n}", $$"""{"Group":"g{{n % 3}}","V":{{v}},"Price":1.50,"Note":"caf\u00e9"}""")))).EnsureSuccessStatusCode();
        for (var n = 1; n <= 30; n++) (await http.DeleteAsync($"items/{n}", ifMatch: null)).EnsureSuccessStatusCode();

        var begin = await WaitCompactedAsync(http, after: 0, "items/200");
        await http.PutIndexAsync("Items/Late", """{"maps":["map('Items', i => ({ V: i.V }))"]}""");
        await AssertIndexesAsync(http);

        magpie.Crash();
        await magpie.StartAsync();
        await AssertIndexesAsync(http);
        for (var v = 4; v <= 5; v++)   // enough superseded versions for another pass
            (await http.BulkPutAsync(Enumerable.Range(31, 270).Select(n => ($"items/{n}", $$"""{"Group":"g{{n % 3}}","V":{{v}}}""")))).EnsureSuccessStatusCode();
        await WaitCompactedAsync(http, after: begin, "items/100");
        var revisions = (await (await http.GetAsync("docs/items/100/revisions")).JsonAsync()).GetProperty("results").EnumerateArray().ToList();
        Assert.Equal([5, 4], revisions.Select(r => r.GetProperty("V").GetInt32()));
        Assert.Equal(90, (await http.QueryNonStaleAsync("from index 'Items/Late' where V = 5")).GetProperty("totalResults").GetInt64() / 3);
    }

    private static async Task AssertIndexesAsync(HttpClient http)
    {
        var live = await http.QueryNonStaleAsync("from index 'Items/ByGroup' where Group = 'g1'");
        Assert.Equal(90, live.GetProperty("totalResults").GetInt64());   // items 31..300 with n % 3 == 1
        var late = await http.QueryNonStaleAsync("from index 'Items/Late' where V = 3");
        Assert.Equal(270, late.GetProperty("totalResults").GetInt64() + (await http.QueryNonStaleAsync("from index 'Items/Late' where V = 4")).GetProperty("totalResults").GetInt64());
        Assert.Equal(0, (await http.QueryNonStaleAsync("from index 'Items/Late' where V = 1")).GetProperty("totalResults").GetInt64());

        // Byte for byte, etag and all; two revisions kept, newest first; a deleted document has none.
        var get = await http.GetAsync("docs/items/200");
        Assert.Contains("\"Price\":1.50,\"Note\":\"caf\\u00e9\"", await get.Content.ReadAsStringAsync());
        var revisions = (await (await http.GetAsync("docs/items/200/revisions")).JsonAsync()).GetProperty("results").EnumerateArray().ToList();
        Assert.Equal([3, 2], revisions.Select(r => r.GetProperty("V").GetInt32()));
        Assert.Equal(get.EtagHeader(), revisions[0].GetProperty("@metadata").GetProperty("@etag").GetInt64());
        Assert.Equal(HttpStatusCode.NotFound, (await http.GetAsync("docs/items/5/revisions")).StatusCode);
    }

    /// <summary>
    /// Waits for a compaction pass that moved the log's start past <paramref name="after"/> and reclaimed the old versions of
    /// <paramref name="id"/> (at most the two kept): a pass truncates only behind every reader, so the first one may have run
    /// while the index was still reading and left older versions for the next. Returns the new start.
    /// </summary>
    private static async Task<long> WaitCompactedAsync(HttpClient http, long after, string id)
    {
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (true)
        {
            var log = (await (await http.GetAsync("stats/pipeline")).JsonAsync()).GetProperty("changeLog");
            var begin = log.GetProperty("beginAddress").GetInt64();
            var kept = (await (await http.GetAsync($"docs/{id}/revisions")).JsonAsync()).GetProperty("results").GetArrayLength();
            if (log.GetProperty("passes").GetInt64() > 0 && begin > Math.Max(after, 64) && kept <= 2) return begin;
            Assert.True(DateTime.UtcNow < deadline, $"no compaction pass: {log}");
            await Task.Delay(250);
        }
    }
}
