using System.Collections.Concurrent;
using System.Net;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Durability;

/// <summary>kill -9 of a real magpie process under concurrent load: every acknowledged write is there after restart.</summary>
public sealed class CrashRecoveryTests
{
    [Fact]
    public async Task Every_acknowledged_write_survives_kill_9_twice()
    {
        var magpie = await MagpieProcess.StartAsync(environment: new() { ["MAGPIE__CHECKPOINTINTERVALSECONDS"] = "1" });
        await using var _ = magpie;
        var acked = new ConcurrentDictionary<string, long>();    // id → etag acknowledged (latest)
        var deleted = new ConcurrentDictionary<string, bool>();  // ids whose delete was acknowledged; never written again

        for (var round = 0; round < 2; round++)
        {
            using var load = new CancellationTokenSource();
            var writers = Enumerable.Range(0, 4).Select(w => Task.Run(() => Write(magpie.Http, $"r{round}w{w}", w % 2 == 0, acked, deleted, load.Token))).ToList();
            await Task.Delay(TimeSpan.FromSeconds(3));
            magpie.Crash();                 // mid-flight: some requests die unanswered
            load.Cancel();
            await Task.WhenAll(writers);
            Assert.True(acked.Count > 100, $"the load acknowledged only {acked.Count} writes");

            await magpie.StartAsync();      // same data directory
            await AssertAllPresent(magpie, acked, deleted);
        }

        var lastEtag = (await magpie.StatsAsync()).GetProperty("lastEtag").GetInt64();
        Assert.True(lastEtag >= acked.Values.Max());
        var next = await magpie.Http.PutAsync("after/crash", "{}");
        Assert.True(next.EtagHeader() > lastEtag, "etags keep increasing across crashes");
    }

    private static async Task AssertAllPresent(MagpieProcess magpie, ConcurrentDictionary<string, long> acked, ConcurrentDictionary<string, bool> deleted)
    {
        var missing = new List<string>();
        await Parallel.ForEachAsync(acked, new ParallelOptions { MaxDegreeOfParallelism = 8 }, async (kv, ct) =>
        {
            using var get = await magpie.Http.GetAsync($"docs/{kv.Key}", ct);
            if (get.StatusCode != HttpStatusCode.OK || get.EtagHeader() < kv.Value)
                lock (missing) missing.Add($"{kv.Key}@{kv.Value}: {(int)get.StatusCode}");
        });
        foreach (var id in deleted.Keys)
        {
            using var get = await magpie.Http.GetAsync($"docs/{id}");
            if (get.StatusCode != HttpStatusCode.NotFound) missing.Add($"{id} was deleted but is back");
        }
        Assert.True(missing.Count == 0, $"{missing.Count} acknowledged writes lost after kill -9: {string.Join(", ", missing.Take(10))}");
    }

    /// <summary>One writer: bulk batches or single PUTs, with updates and deletes of its own ids only.</summary>
    private static async Task Write(HttpClient http, string prefix, bool bulk, ConcurrentDictionary<string, long> acked,
        ConcurrentDictionary<string, bool> deleted, CancellationToken ct)
    {
        var n = 0;
        try
        {
            while (!ct.IsCancellationRequested)
            {
                if (bulk)
                {
                    var ids = Enumerable.Range(n, 50).Select(i => $"crash/{prefix}-{i}").ToList();
                    var pad = new string('x', 200);
                    using var response = await http.BulkPutAsync(ids.Select(id => (id, $$"""{"writer":"{{prefix}}","pad":"{{pad}}"}""")));
                    if (response.StatusCode != HttpStatusCode.OK) continue;
                    var etags = await response.BulkEtagsAsync();
                    for (var i = 0; i < ids.Count; i++) acked[ids[i]] = etags[i];
                    n += 50;
                }
                else
                {
                    var id = $"crash/{prefix}-{n}";
                    using var put = await http.PutAsync(id, $$"""{"n":{{n}}}""");
                    if (put.IsSuccessStatusCode) acked[id] = put.EtagHeader();
                    if (n % 3 == 0 && put.IsSuccessStatusCode)
                    {
                        using var update = await http.PutAsync(id, $$"""{"n":{{n}},"updated":true}""");
                        if (update.IsSuccessStatusCode) acked[id] = update.EtagHeader();
                    }
                    if (n % 7 == 0 && put.IsSuccessStatusCode)
                    {
                        // Stop tracking it as present before the delete: if the delete lands but its reply is lost, the id is in neither set.
                        acked.TryRemove(id, out var _);
                        using var delete = await http.DeleteAsync(id, null);
                        if (delete.IsSuccessStatusCode) deleted[id] = true;
                    }
                    n++;
                }
            }
        }
        catch (Exception e) when (e is HttpRequestException or OperationCanceledException)
        {
            // The process was killed under us: whatever was not acknowledged doesn't count.
        }
    }
}
