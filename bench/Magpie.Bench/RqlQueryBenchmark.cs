using System.Diagnostics;
using System.Net.Http.Json;
using Magpie.Contracts.Search;

namespace Magpie.Bench;

/// <summary>
/// RQL's full-text constructs and a JavaScript projection over HTTP against the same queries on the engine alone: each
/// kind for a fixed time from one client, then from 16; p50 and p99 of a 25-hit page.
/// </summary>
public static class RqlQueryBenchmark
{
    private const string Index = IndexBenchmark.Name;

    /// <summary>Name, the RQL over HTTP, the engine's query for the same hits (null: the HTTP side only).</summary>
    public static readonly (string Kind, string Rql, SearchQuery? Engine)[] Kinds =
    [
        ("wildcard", $"from index '{Index}' where search(Body, 'vect* quer*', and)", new FullTextQuery("Body", "vect* quer*", AllWords: true)),
        ("phrase", $"from index '{Index}' where search(Body, '\"cache deploy\"')", new FullTextQuery("Body", "\"cache deploy\"")),
        ("fuzzy", $"from index '{Index}' where search(Body, 'deplyo~1 kafak~1', and)", new FullTextQuery("Body", "deplyo~1 kafak~1", AllWords: true)),
        ("plain page", $"from index '{Index}' where search(Body, '\"cache deploy\"')", null),
        ("js projection", $"from index '{Index}' as p where search(Body, '\"cache deploy\"') select {{ Title: p.Title, Words: p.Body.split(' ').length, Tags: p.Tags.join(', ') }}", null),
    ];

    public sealed record Latencies(List<double> Ms, double Seconds)
    {
        public double P50 => IndexBenchmark.Percentile(Ms, 0.5);
        public double P99 => IndexBenchmark.Percentile(Ms, 0.99);
        public double PerSecond => Ms.Count / Seconds;
    }

    public static async Task<Latencies> HttpAsync(HttpClient http, string rql, int clients, TimeSpan duration)
    {
        (await http.PostAsJsonAsync("queries", new { query = rql, pageSize = 25 })).EnsureSuccessStatusCode();   // warm
        return new Latencies(await IndexBenchmark.LatencyAsync(http, rql, clients, duration), duration.TotalSeconds);
    }

    public static async Task<Latencies> EngineAsync(IShardSearcher index, SearchQuery query, int clients, TimeSpan duration)
    {
        var request = new SearchRequest(query, [], 25);
        await index.SearchAsync(request);   // warm
        return new Latencies(await IndexBenchmark.TimedAsync(() => index.SearchAsync(request), clients, duration), duration.TotalSeconds);
    }
}
