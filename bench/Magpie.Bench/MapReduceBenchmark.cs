using System.Diagnostics;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Producers;

namespace Magpie.Bench;

/// <summary>
/// Map/reduce throughput: posts per user per day (count and sum of score) over synthetic posts already in
/// the store, end to end in the embedded magpie — change feed, the JS map, keys, reduce trees, the results and the
/// reduce state into Lucene, commits — until the index is not stale. The other side is the plain map index with the
/// same map over the same documents, built alone in the same process just before: the ratio is what the reduce costs.
/// </summary>
public static class MapReduceBenchmark
{
    private const string Map = "map('Posts', p => ({ User: p.OwnerUserId, Day: p.CreationDate.substring(0, 10), Count: 1, Score: p.Score }))";

    public static readonly IndexDefinition PlainMap = new() { Maps = [Map] };

    public static readonly IndexDefinition PerUserPerDay = new()
    {
        Maps = [Map],
        Reduce = "groupBy(x => ({ User: x.User, Day: x.Day })).aggregate(g => ({ User: g.key.User, Day: g.key.Day, " +
                 "Count: g.values.reduce((n, v) => n + v.Count, 0), Score: g.values.reduce((s, v) => s + v.Score, 0) }))",
    };

    public sealed record Side(string Name, double EntriesPerSecond, TimeSpan Elapsed, long Results);

    /// <summary>Builds <paramref name="definition"/> over what the store holds, waits until it is not stale, deletes it again.</summary>
    public static async Task<Side> BuildAsync(HttpClient http, string name, IndexDefinition definition, long entries, TimeSpan timeout)
    {
        var watch = Stopwatch.StartNew();
        var put = await http.PutAsJsonAsync($"indexes/{name}", definition, JsonSerializerOptions.Web);
        if (!put.IsSuccessStatusCode) throw new InvalidOperationException($"PUT index: {(int)put.StatusCode} {await put.Content.ReadAsStringAsync()}");
        var deadline = DateTime.UtcNow + timeout;
        JsonElement status;
        while (true)
        {
            status = (await http.GetFromJsonAsync<JsonElement>($"indexes/{name}")).GetProperty("status");
            if (!status.GetProperty("isStale").GetBoolean() && status.GetProperty("indexedEtag").GetInt64() > 0) break;
            if (DateTime.UtcNow > deadline) throw new TimeoutException($"{name} still stale after {timeout}: {status}");
            await Task.Delay(50);
        }
        var elapsed = watch.Elapsed;
        var results = status.GetProperty("entries").GetInt64();
        (await http.DeleteAsync($"indexes/{name}")).EnsureSuccessStatusCode();
        return new Side(name, entries / elapsed.TotalSeconds, elapsed, results);
    }

    public static async Task LoadAsync(Uri magpie, IReadOnlyList<DocumentWrite[]> posts) => await IngestBenchmark.HttpBulkAsync(magpie, posts, 8);
}
