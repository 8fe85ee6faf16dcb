using System.Net;
using System.Net.Http.Json;
using System.Numerics.Tensors;
using System.Text;
using System.Text.Json;
using Magpie.Tests.Http;
using Magpie.Tests.Queries.Conformance;

namespace Magpie.Tests.Queries.Search;

/// <summary>
/// vector.search checked against a brute-force computation here: an embedding per post of the sample (deterministic, from its id),
/// the nearest k by cosine, dot product and Euclidean distance, with filters, sorts, updates and deletes; int8's recall measured.
/// </summary>
public static class VectorCases
{
    public const int Dimensions = 16;
    public const string Index = "Embeddings/ByVector", Int8Index = "Embeddings/ByVectorInt8";

    private static string Definition(string quantization) => $$"""
        { "maps": ["map('Embeddings', e => ({ PostTypeId: e.PostTypeId, Score: e.Score, Title: e.Title || null, Vector: createVector(e.Vector) }))"],
          "fields": { "Vector": { "vector": { "dimensions": {{Dimensions}}, "quantization": "{{quantization}}" } }, "Title": { "indexing": "search" } } }
        """;

    public sealed record Embedding(string Id, int Type, double Score, float[] Vector, string? Title = null);

    /// <summary>One embedding per post, from a generator seeded by its number (clusters by post type, so filters matter).</summary>
    public static List<Embedding> Of(List<SamplePost> posts) => posts.Select(p =>
    {
        var n = int.Parse(p.Id["posts/".Length..]);
        var random = new Random(n);
        var v = Enumerable.Range(0, Dimensions).Select(i => (float)(random.NextDouble() * 2 - 1 + (i == p.Type ? 0.8 : 0))).ToArray();
        return new Embedding($"embeddings/{n}", p.Type, p.Score, v, p.Title);
    }).ToList();

    public static async Task WriteAsync(HttpClient writer, IEnumerable<Embedding> embeddings, Func<Task> written)
    {
        foreach (var chunk in embeddings.Chunk(500))
        {
            var body = JsonSerializer.Serialize(chunk.Select(e => new { method = "PUT", id = e.Id, document = new { e.Type, PostTypeId = e.Type, e.Score, e.Title, e.Vector } }));
            var r = await writer.PostAsync("bulk_docs", new StringContent(body, Encoding.UTF8, "application/json"));
            Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        }
        await written();
    }

    public static async Task DefineAsync(HttpClient definer)
    {
        await definer.PutIndexAsync(Index, Definition("none"));
        await definer.PutIndexAsync(Int8Index, Definition("int8"));
    }

    private static float Similarity(string kind, float[] a, float[] q) => kind switch
    {
        "cosine" => TensorPrimitives.CosineSimilarity(a, q),
        "dot" => TensorPrimitives.Dot(a, q),
        _ => 1f / (1f + TensorPrimitives.Distance(a, q) * TensorPrimitives.Distance(a, q)),
    };

    /// <summary>The k nearest as computed here: most similar first, ties by id.</summary>
    private static List<(string Id, float Similarity)> Nearest(IEnumerable<Embedding> all, float[] q, string kind, int k, float minimum, Func<Embedding, bool>? filter = null) =>
        all.Where(e => filter?.Invoke(e) ?? true).Select(e => (e.Id, Similarity: Similarity(kind, e.Vector, q)))
            .Where(e => e.Similarity >= minimum).OrderByDescending(e => e.Similarity).ThenBy(e => e.Id, StringComparer.Ordinal).Take(k).ToList();

    private static async Task<List<(string Id, float Similarity)>> AskAsync(HttpClient http, string rql, object parameters)
    {
        var r = await http.PostAsJsonAsync("queries", new { query = rql, parameters, pageSize = 1024, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, $"{rql}\n{await r.Content.ReadAsStringAsync()}");
        var answer = await r.JsonAsync();
        Assert.False(answer.GetProperty("isStale").GetBoolean());
        return answer.GetProperty("results").EnumerateArray()
            .Select(x => (x.GetProperty("@metadata").GetProperty("@id").GetString()!,
                x.GetProperty("@metadata").TryGetProperty("@index-score", out var score) ? score.GetSingle() : float.NaN)).ToList();
    }

    private static void AssertSame(List<(string Id, float Similarity)> expected, List<(string Id, float Similarity)> actual)
    {
        Assert.Equal(expected.Select(e => e.Id), actual.Select(a => a.Id));
        foreach (var (e, a) in expected.Zip(actual)) Assert.True(Math.Abs(e.Similarity - a.Similarity) < 1e-4, $"{e.Id}: {a.Similarity} for {e.Similarity}");
    }

    public static async Task The_nearest_vectors_are_the_true_nearest_with_filters_sorts_updates_and_deletes(HttpClient writer, HttpClient query, List<SamplePost> posts, Func<Task> written)
    {
        var all = Of(posts).ToDictionary(e => e.Id);
        var q = all.Values.First().Vector.Select((x, i) => x * 0.5f + (i % 3 == 0 ? 0.4f : -0.1f)).ToArray();
        // Every similarity, thresholds and k; the answers are the brute-force ones, scores and order.
        AssertSame(Nearest(all.Values, q, "cosine", 20, -1), await AskAsync(query, $"from index '{Index}' where vector.search(Vector, $q, -1, 20)", new { q }));
        AssertSame(Nearest(all.Values, q, "cosine", 16, 0.75f), await AskAsync(query, $"from index '{Index}' where vector.search(Vector, $q)", new { q }));
        AssertSame(Nearest(all.Values, q, "dot", 10, float.NegativeInfinity), await AskAsync(query, $"from index '{Index}' where vector.search(Vector, $q, -1000, 10, $o)", new { q, o = new { Similarity = "dot" } }));
        AssertSame(Nearest(all.Values, q, "euclidean", 10, 0.01f), await AskAsync(query, $"from index '{Index}' where vector.search(Vector, $q, 0.01, 10, {{ \"Similarity\": \"euclidean\" }})", new { q }));
        // Filtered: the nearest among the entries that pass, not the nearest then filtered.
        AssertSame(Nearest(all.Values, q, "cosine", 25, 0, e => e.Type == 2 && e.Score >= 1),
            await AskAsync(query, $"from index '{Index}' where vector.search(Vector, $q, 0, 25) and PostTypeId = 2 and Score >= 1", new { q }));
        // Sorted otherwise: the same nearest, in the order asked.
        var byScore = await AskAsync(query, $"from index '{Index}' where vector.search(Vector, $q, -1, 30) order by Score desc, id()", new { q });
        Assert.Equal(Nearest(all.Values, q, "cosine", 30, -1).Select(n => all[n.Id]).OrderByDescending(e => e.Score).ThenBy(e => e.Id, StringComparer.Ordinal).Select(e => e.Id),
            byScore.Select(b => b.Id));
        // The query vector as base64 float32s.
        var base64 = Convert.ToBase64String(System.Runtime.InteropServices.MemoryMarshal.AsBytes(q.AsSpan()).ToArray());
        AssertSame(Nearest(all.Values, q, "cosine", 5, -1), await AskAsync(query, $"from index '{Index}' where vector.search(Vector, $q, -1, 5)", new { q = base64 }));
        // Streamed: the same nearest, in the same order (sharded too: the stream's first page runs the same first pass).
        var streamed = await query.PostAsJsonAsync("streams/queries", new { query = $"from index '{Index}' where vector.search(Vector, $q, -1, 20)", parameters = new { q } });
        Assert.True(streamed.IsSuccessStatusCode, await streamed.Content.ReadAsStringAsync());
        Assert.Equal(Nearest(all.Values, q, "cosine", 20, -1).Select(n => n.Id),
            (await streamed.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(l => JsonDocument.Parse(l).RootElement.GetProperty("@metadata").GetProperty("@id").GetString()));
        // A collection answers through an automatic index that makes vectors of the field.
        Assert.Equal(Nearest(all.Values, q, "cosine", 12, -1).Select(n => n.Id), (await AskAsync(query, "from Embeddings where vector.search(Vector, $q, -1, 12)", new { q })).Select(a => a.Id));

        // Updates and deletes: a vector moved onto the query becomes the nearest; a deleted one is gone.
        var moved = all.Values.OrderBy(e => e.Id, StringComparer.Ordinal).Skip(7).First();
        var nearest = Nearest(all.Values, q, "cosine", 1, -1)[0].Id;
        all[moved.Id] = moved with { Vector = q.Select(x => x * 3).ToArray() };
        all.Remove(nearest);
        await WriteAsync(writer, [all[moved.Id]], () => Task.CompletedTask);
        Assert.Equal(HttpStatusCode.NoContent, (await writer.DeleteAsync($"docs/{nearest}")).StatusCode);
        await written();
        var after = await AskAsync(query, $"from index '{Index}' where vector.search(Vector, $q, -1, 20)", new { q });
        Assert.Equal(moved.Id, after[0].Id);
        AssertSame(Nearest(all.Values, q, "cosine", 20, -1), after);
    }

    /// <summary>int8 copies: the same query's top 20 mostly the exact ones (recall measured, at least 0.9 on these vectors).</summary>
    public static async Task Int8_vectors_find_nearly_the_same_nearest(HttpClient query, List<SamplePost> posts)
    {
        var all = Of(posts);
        var recalls = new List<double>();
        foreach (var probe in all.Where((_, i) => i % 97 == 0).Take(10))
        {
            var q = probe.Vector.Select(x => -x).ToArray();
            var exact = Nearest(all, q, "cosine", 20, -1).Select(n => n.Id).ToHashSet();
            var approximate = await AskAsync(query, $"from index '{Int8Index}' where vector.search(Vector, $q, -1, 20)", new { q });
            recalls.Add(approximate.Count(a => exact.Contains(a.Id)) / 20.0);
        }
        Assert.True(recalls.Average() >= 0.9, $"int8 recall@20 {recalls.Average():0.00}");
    }

    public static async Task Bad_vectors_fail_their_document_and_bad_searches_are_refused(HttpClient writer, HttpClient definer, HttpClient query, Func<Task> written)
    {
        // Documents: another number of dimensions, not numbers: each fails alone, the index runs on.
        await WriteAsync(writer, [], () => Task.CompletedTask);
        foreach (var (id, vector) in new[] { ("embeddings/bad-dims", "[1, 2, 3]"), ("embeddings/bad-kind", "[\"a\", 2]") })
            Assert.True((await writer.PutAsync(id, $$"""{"PostTypeId": 1, "Score": 0, "Vector": {{vector}}}""")).IsSuccessStatusCode);
        await written();
        await query.QueryNonStaleAsync($"from index '{Index}' where PostTypeId = 1");
        var errors = (await (await definer.GetAsync($"indexes/{Index}")).JsonAsync()).GetProperty("status");
        var text = errors.ToString();
        Assert.Contains("embeddings/bad-dims", text);
        Assert.Contains("declared with 16 dimensions", text);
        Assert.Contains("embeddings/bad-kind", text);
        Assert.Contains("createVector takes numbers", text);

        async Task Refused(string rql, object parameters, string detail)
        {
            var r = await query.PostAsJsonAsync("queries", new { query = rql, parameters });
            await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, detail);
        }
        var q = new float[Dimensions];
        await Refused($"from index '{Index}' where vector.search(Vector, $q)", new { q = new float[3] }, "has 3 dimensions");
        await Refused($"from index '{Index}' where vector.search(Vector, $q, 0.5, 5000)", new { q }, "k must be a whole number from 1 to 1,024");
        await Refused($"from index '{Index}' where vector.search(Vector, $q, 2)", new { q }, "minimum similarity must be a number from -1 to 1");
        await Refused($"from index '{Index}' where vector.search(Vector, $q) or PostTypeId = 1", new { q }, "join it to the others with and");
        await Refused($"from index '{Index}' where vector.search(Vector, $q)", new { q = new float[5000] }, "1 to 4,096");
        await Refused($"from index '{Index}' where vector.search(Vector, $q)", new { q = "not base64!" }, "neither an array of numbers nor base64");
        await Refused($"from index '{Index}' where vector.search(Vector, $q, 0.5, 5, {{ \"Similarity\": \"hamming\" }})", new { q }, "Similarity is");
    }

    /// <summary>
    /// hybrid(): each ranking as Magpie answers it alone (the text one by BM25, the vector one checked against brute force here),
    /// fused here by reciprocal rank fusion — the hybrid query's ids, order and scores are those.
    /// </summary>
    public static async Task Hybrid_ranks_by_reciprocal_rank_fusion_of_both_rankings(HttpClient query, List<SamplePost> posts)
    {
        var all = Of(posts);
        var q = all[3].Vector;
        foreach (var filter in new[] { "", " and PostTypeId = 1" })
        {
            var text = (await AskAsync(query, $"from index '{Index}' where search(Title, 'history sources'){filter} order by score() desc", new { })).Take(40).Select(t => t.Id).ToList();
            var vector = Nearest(all, q, "cosine", 30, -1, filter.Length == 0 ? null : e => e.Type == 1).Select(n => n.Id).ToList();
            var fused = new Dictionary<string, float>();
            foreach (var ranking in new[] { text, vector })
                for (var rank = 1; rank <= ranking.Count; rank++) fused[ranking[rank - 1]] = fused.GetValueOrDefault(ranking[rank - 1]) + 1f / (60 + rank);
            var expected = fused.OrderByDescending(f => f.Value).ThenBy(f => f.Key, StringComparer.Ordinal).Select(f => (f.Key, f.Value)).ToList();
            var hybrid = await AskAsync(query, $"from index '{Index}' where hybrid(search(Title, 'history sources'), vector.search(Vector, $q, -1, 30), $o){filter}",
                new { q, o = new { Window = 40 } });
            AssertSame(expected, hybrid);
            Assert.Contains(hybrid, h => text.Contains(h.Id) && vector.Contains(h.Id));   // found by both: ranked higher than by either alone
        }
        var r = await query.PostAsJsonAsync("queries", new { query = $"from index '{Index}' where hybrid(search(Title, 'x'), search(Title, 'y'))" });
        await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, "hybrid's second ranking is a vector.search");
        r = await query.PostAsJsonAsync("queries", new { query = $"from index '{Index}' where hybrid(search(Title, 'x'), vector.search(Vector, $q), {{ \"Window\": 0 }})", parameters = new { q } });
        await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, "Window must be a whole number from 1 to 1,024");
        r = await query.PostAsJsonAsync("queries", new { query = $"from index '{Index}' where hybrid(search(Title, 'x'), vector.search(Vector, $q), $o)", parameters = new { q, o = new { RankConstant = "60" } } });
        await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, "RankConstant must be a whole number from 1 to 10,000");
        r = await query.PostAsJsonAsync("queries", new { query = $"from index '{Index}' where vector.search(Vector, $q) select distinct Title", parameters = new { q } });
        await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, "select distinct does not combine with vector.search");
        // Past float32's range a similarity is infinity or 0: refused, not answered with nothing.
        var huge = Enumerable.Repeat(3e38f, q.Length).ToArray();
        r = await query.PostAsJsonAsync("queries", new { query = $"from index '{Index}' where vector.search(Vector, $q)", parameters = new { q = huge } });
        await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, "is too long for float32 arithmetic");
    }
}
