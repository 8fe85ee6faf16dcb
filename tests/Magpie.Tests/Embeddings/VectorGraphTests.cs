using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Xunit.Abstractions;

namespace Magpie.Tests.Embeddings;

/// <summary>
/// Nearest-neighbour graphs (HNSW) under vector.search, against exact(vector.search(…)) on the same index: recall of the graph's
/// answers, scores that are the exact similarities, filters, and a kill -9 while graphs are being built.
/// </summary>
public sealed class VectorGraphTests(ITestOutputHelper output)
{
    private const int Dimensions = 64, Points = 20_000, Clusters = 200;

    private static float[][] Vectors(int count, int seed)
    {
        var random = new Random(seed);
        var centreRandom = new Random(1);
        var centres = Enumerable.Range(0, Clusters).Select(_ => Enumerable.Range(0, Dimensions).Select(_ => (float)(centreRandom.NextDouble() * 2 - 1)).ToArray()).ToArray();
        return Enumerable.Range(0, count).Select(_ =>
        {
            var centre = centres[random.Next(Clusters)];
            return centre.Select(x => x + (float)(random.NextDouble() - 0.5) * 0.6f).ToArray();
        }).ToArray();
    }

    private static string[] Files(MagpieProcess magpie, string pattern) =>
        Directory.GetFiles(Path.Combine(magpie.DataDir), pattern, SearchOption.AllDirectories).Where(f => f.Contains("graphs")).ToArray();

    [Fact]
    public async Task Graph_answers_recall_the_exact_nearest_with_exact_scores_and_survive_a_kill_during_their_build()
    {
        await using var magpie = await MagpieProcess.StartAsync(environment: new() { ["MAGPIE__VECTORGRAPHMINIMUM"] = "1000" });
        await magpie.Http.PutIndexAsync("Points/ByVector", $$"""
            { "maps": ["map('Points', p => ({ Group: p.Group, V: createVector(p.V) }))"], "fields": { "V": { "vector": { "dimensions": {{Dimensions}} } } } }
            """);
        var points = Vectors(Points, 7);
        foreach (var chunk in points.Select((v, i) => (v, i)).Chunk(2_000))
        {
            var body = JsonSerializer.Serialize(chunk.Select(p => new { method = "PUT", id = $"points/{p.i}", document = new { Group = p.i % 10, V = p.v } }));
            var r = await magpie.Http.PostAsync("bulk_docs", new StringContent(body, Encoding.UTF8, "application/json"));
            Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        }
        await magpie.Http.QueryNonStaleAsync("from index 'Points/ByVector' limit 1");

        // The commit queues the segments' graphs, before any search asks; kill -9 once a build is under way (a file being written or written).
        var queries = Vectors(40, 99);
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (Files(magpie, "*.tmp").Length + Files(magpie, "*.usearch").Length == 0 && DateTime.UtcNow < deadline) await Task.Delay(20);
        Assert.NotEmpty(Files(magpie, "*.tmp").Concat(Files(magpie, "*.usearch")));
        magpie.Crash();
        var killedMidWrite = Files(magpie, "*.tmp").Length > 0;
        await magpie.StartAsync();

        // The reopened index queues what it lacks; wait, without searching, until the graphs are all built (the index's stats
        // show none pending), then compare with exact().
        var count = 0;
        while (DateTime.UtcNow < deadline.AddSeconds(120))
        {
            var graphs = (await (await magpie.Http.GetAsync("indexes/Points/ByVector/stats")).JsonAsync()).GetProperty("vectorGraphs");
            if (graphs.ValueKind == JsonValueKind.Object && graphs.GetProperty("pending").GetInt32() == 0 && (count = graphs.GetProperty("built").GetInt32()) > 0) break;
            await Task.Delay(500);
        }
        Assert.True(count > 0, "no graph was built");
        Assert.True(Files(magpie, "*.usearch").Length >= count);
        // A graph file the kill left half written is gone: the index removed it on opening, and built that graph again.
        Assert.Empty(Files(magpie, "*.tmp"));
        output.WriteLine($"killed with a graph file half written: {killedMidWrite}");

        double found = 0, asked = 0;
        foreach (var (q, i) in queries.Select((q, i) => (q, i)))
        {
            var filter = i % 2 == 0 ? null : $"Group < 5";
            var exact = await SearchAsync(magpie, q, exact: true, filter);
            var approximate = await SearchAsync(magpie, q, exact: false, filter);
            asked += exact.Count;
            found += approximate.Keys.Intersect(exact.Keys).Count();
            // Scores are the exact cosine similarities, whichever way a result was found; filters hold.
            foreach (var (id, score) in approximate)
            {
                var n = int.Parse(id["points/".Length..]);
                Assert.Equal(System.Numerics.Tensors.TensorPrimitives.CosineSimilarity(points[n], q), score, 0.0005);
                if (filter is not null) Assert.True(n % 10 < 5, id);
            }
        }
        output.WriteLine($"{count} graphs, recall@10 {found / asked:F3} over {queries.Length} searches");
        Assert.True(found / asked >= 0.95, $"recall@10 {found / asked:F3}");
    }

    private static async Task<Dictionary<string, float>> SearchAsync(MagpieProcess magpie, float[] q, bool exact, string? filter = null)
    {
        var search = "vector.search(V, $q, -1, 10)";
        var rql = $"from index 'Points/ByVector' where {(exact ? $"exact({search})" : search)}{(filter is null ? "" : $" and {filter}")}";
        var r = await magpie.Http.PostAsJsonAsync("queries", new { query = rql, parameters = new { q }, pageSize = 10 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        return (await r.JsonAsync()).GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata"))
            .ToDictionary(m => m.GetProperty("@id").GetString()!, m => m.GetProperty("@index-score").GetSingle());
    }
}
