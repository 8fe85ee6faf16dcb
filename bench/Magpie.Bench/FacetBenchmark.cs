using System.Diagnostics;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Contracts.Indexes;

namespace Magpie.Bench;

/// <summary>
/// The facet benchmark, over the real magpie process and HTTP on both sides. Three facets over 1M synthetic
/// posts: <c>Tag</c> (the first tag, 20 values), <c>Owner</c> (5,000 values), five <c>Score</c> ranges; for match-all
/// and for a 10% filter (<c>Views &lt; 25000</c>). Facet side: one <c>select facet(…)</c> query (every value returned).
/// Per-term side (the seed's first design): one count query per value and per range (<c>where Tag = $v</c>, page size 1),
/// two at a time (the machine's cores), the same figures assembled.
/// </summary>
public static class FacetBenchmark
{
    public const string Name = "Bench/Facets";

    public static readonly IndexDefinition Definition = new()
    {
        Maps = ["map('Posts', p => ({ Tag: p.Tags[0], Owner: 'u' + (p.OwnerUserId % 5000), Score: p.Score, Views: p.ViewCount }))"],
    };

    public static readonly string[] Ranges = ["Score < 0", "Score between 0 and 9", "Score between 10 and 49", "Score between 50 and 199", "Score >= 200"];

    public const string Filter = "Views < 25000";

    public static string FacetQuery(string? filter) =>
        $"from index '{Name}'{(filter is null ? "" : " where " + filter)} select facet(Tag), facet(Owner), facet({string.Join(", ", Ranges)}) as Score";

    public sealed record Latencies(List<double> Ms)
    {
        public double P50 => IndexBenchmark.Percentile(Ms, 0.50);
        public double P99 => IndexBenchmark.Percentile(Ms, 0.99);
    }

    /// <summary>The facet query <paramref name="runs"/> times; returns the latencies and the last answer's facets.</summary>
    public static async Task<(Latencies Latency, JsonElement Facets)> FacetsAsync(HttpClient http, string? filter, int runs)
    {
        var ms = new List<double>();
        JsonElement facets = default;
        for (var i = 0; i < runs; i++)
        {
            var watch = Stopwatch.StartNew();
            var body = await QueryAsync(http, FacetQuery(filter), null);
            ms.Add(watch.Elapsed.TotalMilliseconds);
            facets = body.GetProperty("facets").Clone();
        }
        return (new Latencies(ms), facets);
    }

    /// <summary>
    /// The same counts as <paramref name="facets"/>, one query per value and per range; checks that they agree.
    /// Returns the time of each full round.
    /// </summary>
    public static async Task<Latencies> PerTermAsync(HttpClient http, string? filter, JsonElement facets, int runs)
    {
        var asks = new List<(string Where, object? Value, long Expected)>();
        foreach (var (facet, field) in new[] { (facets[0], "Tag"), (facets[1], "Owner") })
            foreach (var v in facet.GetProperty("values").EnumerateArray())
                asks.Add(($"{field} = $v", v.GetProperty("value").GetString(), v.GetProperty("count").GetInt64()));
        var ranges = facets[2].GetProperty("values").EnumerateArray().ToList();
        for (var r = 0; r < Ranges.Length; r++) asks.Add((Ranges[r], null, ranges[r].GetProperty("count").GetInt64()));

        var ms = new List<double>();
        for (var i = 0; i < runs; i++)
        {
            var watch = Stopwatch.StartNew();
            await Parallel.ForEachAsync(asks, new ParallelOptions { MaxDegreeOfParallelism = Environment.ProcessorCount }, async (ask, ct) =>
            {
                var where = filter is null ? ask.Where : $"{filter} and {ask.Where}";
                var body = await QueryAsync(http, $"from index '{Name}' where {where}", ask.Value is null ? null : new { v = ask.Value }, pageSize: 1);
                var total = body.GetProperty("totalResults").GetInt64();
                if (total != ask.Expected) throw new InvalidOperationException($"per-term count of {where} ({ask.Value}): {total}, the facet said {ask.Expected}");
            });
            ms.Add(watch.Elapsed.TotalMilliseconds);
        }
        return new Latencies(ms);
    }

    /// <summary>The same query without its facets, one hit a page: what matching costs before anything is counted (the floor).</summary>
    public static async Task<Latencies> QueryAloneAsync(HttpClient http, string? filter, int runs)
    {
        var ms = new List<double>();
        for (var i = 0; i < runs; i++)
        {
            var watch = Stopwatch.StartNew();
            await QueryAsync(http, $"from index '{Name}'{(filter is null ? "" : " where " + filter)}", null, pageSize: 1);
            ms.Add(watch.Elapsed.TotalMilliseconds);
        }
        return new Latencies(ms);
    }

    private static async Task<JsonElement> QueryAsync(HttpClient http, string rql, object? parameters, int pageSize = 25)
    {
        var r = await http.PostAsJsonAsync("queries", new { query = rql, parameters, pageSize });
        if (!r.IsSuccessStatusCode) throw new InvalidOperationException($"{rql}: {(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}");
        var body = await r.Content.ReadFromJsonAsync<JsonElement>();
        if (body.GetProperty("isStale").GetBoolean()) throw new InvalidOperationException($"{rql}: stale");
        return body;
    }
}
