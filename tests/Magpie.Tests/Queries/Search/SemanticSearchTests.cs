using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Http;
using Magpie.Tests.Queries.Conformance;

namespace Magpie.Tests.Queries.Search;

/// <summary>
/// <c>vector.search(embedding.text(…), $q)</c> on the Stack Exchange sample, embedded: questions found by what they mean through
/// wording they do not share, which a keyword search on the same field misses.
/// </summary>
public sealed class SemanticSearchTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>
{
    private HttpClient Http => fx.Magpie.Http;

    /// <summary>Paraphrases written for this test, each of one question's title and sharing almost none of its words.</summary>
    public static readonly (string Id, string Query)[] Paraphrases =
    [
        ("posts/865", "I want to contest a flag someone raised on my post"),
        ("posts/197", "remove the misspelled democracy tag"),
        ("posts/42", "can I ask about politics from the last few decades"),
        ("posts/497", "reward answers that give good references"),
        ("posts/2057", "proposal for a tag about books"),
        ("posts/18", "stop posting questions that are answered on an online encyclopedia"),
        ("posts/3542", "making reopening of closed posts work better"),
        ("posts/526", "clothing versus fashion tag, what is the distinction"),
    ];

    private async Task<List<string>> TopAsync(string rql, object parameters, int n = 5)
    {
        // Embedding a field's text takes a while on first use (the index is built then): the wait is asked again, up to 5 minutes.
        JsonElement body;
        var deadline = DateTime.UtcNow.AddMinutes(5);
        do
        {
            var r = await Http.PostAsJsonAsync("queries", new { query = rql, parameters, pageSize = n, waitForNonStaleResults = true, timeoutMs = 50_000 });
            Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
            body = await r.JsonAsync();
        } while (body.GetProperty("isStale").GetBoolean() && DateTime.UtcNow < deadline);
        Assert.False(body.GetProperty("isStale").GetBoolean(), rql);
        return body.GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();
    }

    [Fact]
    public async Task One_rql_line_finds_paraphrased_titles_that_a_keyword_search_misses()
    {
        foreach (var (id, query) in Paraphrases)
        {
            var semantic = await TopAsync("from Posts where vector.search(embedding.text(Title), $q, 0.3)", new { q = query });
            Assert.True(semantic.Contains(id), $"'{query}': {id} is not among {string.Join(", ", semantic)}");
            var keywords = await TopAsync("from Posts where search(Title, $q)", new { q = query });
            Assert.DoesNotContain(id, keywords);
        }
        // The automatic index made on first use embeds the field, and is the one every embedding.text(Title) query reuses.
        var indexes = await (await Http.GetAsync("indexes")).Content.ReadAsStringAsync();
        Assert.Contains("Auto/Posts/ByTitle_embedding", indexes);
    }

    [Fact]
    public Task The_ten_nearest_titles_are_the_models_own_ten_nearest() => NearestTitlesAsync(Http, fx.Posts);

    /// <summary>
    /// The answer against the model run here, in this process: every title and the query embedded, the ten best by cosine. The
    /// scores must be those similarities (so the ten found are the ten nearest); sharded (Kafka mode) that checks the shards'
    /// threshold too.
    /// </summary>
    internal static async Task NearestTitlesAsync(HttpClient query, List<SamplePost> posts)
    {
        var titled = posts.Where(p => !string.IsNullOrWhiteSpace(p.Title)).ToList();
        var model = Magpie.Embeddings.BuiltInModel.Shared;
        var vectors = await model.EmbedAsync(titled.Select(p => p.Title!).ToList(), CancellationToken.None);
        foreach (var text in new[] { "one person operating several user profiles", "which sources can answers cite", "tag synonyms for countries" })
            await AssertNearestAsync("from Posts where vector.search(embedding.text(Title), $q, 0, 10)", new { q = text }, (await model.EmbedAsync([text], CancellationToken.None))[0]);
        // embedding.forDoc: the titles nearest a post's own title (the vector the index holds for it, read from whichever shard has
        // it): the post itself first, at 1. A post that does not exist is like none.
        foreach (var i in new[] { 3, titled.Count / 2 })
            await AssertNearestAsync("from Posts where vector.search(embedding.text(Title), embedding.forDoc($id), 0, 10)", new { id = titled[i].Id }, vectors[i]);
        var missing = await query.PostAsJsonAsync("queries", new { query = "from Posts where vector.search(embedding.text(Title), embedding.forDoc('posts/none'))" });
        Assert.True(missing.IsSuccessStatusCode, await missing.Content.ReadAsStringAsync());
        Assert.Equal(0, (await missing.JsonAsync()).GetProperty("totalResults").GetInt32());

        async Task AssertNearestAsync(string rql, object parameters, float[] q)
        {
            var expected = titled.Select((p, i) => (p.Id, Score: System.Numerics.Tensors.TensorPrimitives.CosineSimilarity(vectors[i], q)))
                .ToDictionary(x => x.Id, x => x.Score);
            var best = expected.Values.OrderDescending().Take(10).ToList();
            JsonElement body;
            var deadline = DateTime.UtcNow.AddMinutes(5);
            do
            {
                var r = await query.PostAsJsonAsync("queries", new { query = rql, parameters, pageSize = 10, waitForNonStaleResults = true, timeoutMs = 50_000 });
                Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
                body = await r.JsonAsync();
            } while (body.GetProperty("isStale").GetBoolean() && DateTime.UtcNow < deadline);
            var found = body.GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata"))
                .Select(m => (Id: m.GetProperty("@id").GetString()!, Score: m.GetProperty("@index-score").GetSingle())).ToList();
            Assert.Equal(10, found.Count);
            for (var i = 0; i < 10; i++)
            {
                Assert.Equal(expected[found[i].Id], found[i].Score, 0.001);
                Assert.Equal(best[i], found[i].Score, 0.001);
            }
        }
    }

    [Fact]
    public async Task Embedding_forDoc_searches_with_the_vector_the_index_holds_for_the_document()
    {
        float[][] vectors = [[1, 0, 0], [0.9f, 0.1f, 0], [0, 1, 0], [0.6f, 0.4f, 0.1f], [-1, 0.2f, 0], [0.7f, 0, 0.7f]];
        for (var i = 0; i < vectors.Length; i++)
            Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync($"fordocs/{i}", JsonSerializer.Serialize(new { V = vectors[i] }))).StatusCode);
        var expected = vectors.Select((v, i) => (Id: $"fordocs/{i}", Score: System.Numerics.Tensors.TensorPrimitives.CosineSimilarity(vectors[3], v)))
            .OrderByDescending(x => x.Score).Take(3).ToList();
        var r = await Http.PostAsJsonAsync("queries", new { query = "from fordocs where vector.search(V, embedding.forDoc($id), -1, 3)", parameters = new { id = "fordocs/3" }, waitForNonStaleResults = true });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var found = (await r.JsonAsync()).GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata"))
            .Select(m => (Id: m.GetProperty("@id").GetString()!, Score: m.GetProperty("@index-score").GetSingle())).ToList();
        Assert.Equal(expected.Select(e => e.Id), found.Select(f => f.Id));
        for (var i = 0; i < 3; i++) Assert.Equal(expected[i].Score, found[i].Score, 0.0001);

        // A document whose map made several entries with a vector: which one it is like would be a guess, so it is refused.
        await Http.PutIndexAsync("ForDocs/Twice", """{ "maps": ["map('fordocs', d => [{ V: createVector(d.V) }, { V: createVector(d.V) }])"] }""");
        await Http.QueryNonStaleAsync("from index 'ForDocs/Twice'");
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("queries", new { query = "from index 'ForDocs/Twice' where vector.search(V, embedding.forDoc('fordocs/1'))" }),
            HttpStatusCode.BadRequest, "holds 2 vectors in 'V'");
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("queries", new { query = "from fordocs where vector.search(V, embedding.forDoc($id))", parameters = new { id = 5 } }),
            HttpStatusCode.BadRequest, "embedding.forDoc takes a document id");
    }

    [Fact]
    public async Task A_title_searched_for_as_written_is_its_own_nearest_at_similarity_one()
    {
        var post = fx.Posts.First(p => p.Id == "posts/526");
        await TopAsync("from Posts where vector.search(embedding.text(Title), $q)", new { q = post.Title });
        var r = await Http.PostAsJsonAsync("queries", new
        {
            query = "from Posts where vector.search(embedding.text(Title), $q)", parameters = new { q = post.Title }, pageSize = 1,
            waitForNonStaleResults = true, timeoutMs = 50_000,
        });
        var first = (await r.JsonAsync()).GetProperty("results")[0].GetProperty("@metadata");
        Assert.Equal(post.Id, first.GetProperty("@id").GetString());
        // The index holds the model's vector of the title, the query the model's vector of the same text: cosine 1.
        Assert.True(first.GetProperty("@index-score").GetSingle() >= 0.999f, first.ToString());
        // exact(): every vector compared, the same nearest.
        Assert.Equal(post.Id, (await TopAsync("from Posts where exact(vector.search(embedding.text(Title), $q))", new { q = post.Title }, 1)).Single());
        // int8 copies: its own field and index, the same nearest.
        Assert.Equal(post.Id, (await TopAsync("from Posts where vector.search(embedding.text_i8(Title), $q)", new { q = post.Title }, 1)).Single());
    }

    /// <summary>
    /// <c>embedding.text_i1</c>: RavenDB's binary quantization (a bit per dimension, set for values ≥ 0, the first in a byte's
    /// highest bit) scored as RavenDB scores it, 1 − differing bits / bits. Checked against bits and Hamming distances computed here
    /// from the model run in the test, for the automatic index and for a static field declared binary.
    /// </summary>
    [Fact]
    public async Task Binary_embeddings_score_one_minus_the_share_of_differing_bits_as_RavenDB_scores_them()
    {
        var titled = fx.Posts.Where(p => !string.IsNullOrWhiteSpace(p.Title)).ToList();
        var model = Magpie.Embeddings.BuiltInModel.Shared;
        var bits = (await model.EmbedAsync(titled.Select(p => p.Title!).ToList(), CancellationToken.None)).Select(Bits).ToList();
        await Http.PutIndexAsync("Posts/Bits", """
            { "maps": ["map('Posts', p => ({ Meaning: createVector(embedding.text(p.Title)) }))"],
              "fields": { "Meaning": { "vector": { "quantization": "binary" } } } }
            """);
        foreach (var text in new[] { "one person operating several user profiles", "tag synonyms for countries" })
        {
            var q = Bits((await model.EmbedAsync([text], CancellationToken.None))[0]);
            var expected = titled.Select((p, i) => (p.Id, Score: 1f - Differing(bits[i], q) / (8f * q.Length))).ToDictionary(x => x.Id, x => x.Score);
            var best = expected.Values.OrderDescending().Take(10).ToList();
            foreach (var rql in new[]
            {
                "from Posts where vector.search(embedding.text_i1(Title), $q, 0, 10)",
                "from Posts where exact(vector.search(embedding.text_i1(Title), $q, 0, 10))",
                "from index 'Posts/Bits' where vector.search(embedding.text(Meaning), $q, 0, 10)",
            })
            {
                await TopAsync(rql, new { q = text }, 10);
                var found = await ScoredAsync(rql, new { q = text });
                Assert.Equal(10, found.Count);
                for (var i = 0; i < 10; i++)
                {
                    Assert.Equal(expected[found[i].Id], found[i].Score, 0.00001);
                    Assert.Equal(best[i], found[i].Score, 0.00001);
                }
            }
            // The default threshold (0.75) holds for binary scores too: nothing under it.
            var thresholded = await ScoredAsync("from Posts where vector.search(embedding.text_i1(Title), $q)", new { q = text });
            Assert.Equal(Math.Min(16, expected.Values.Count(s => s >= 0.75f)), thresholded.Count);
        }
        Assert.Contains("Auto/Posts/ByTitle_embedding_i1", await Http.GetStringAsync("indexes"));
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("queries", new
        {
            query = "from Posts where vector.search(embedding.text_i1(Title), $q, 0.5, 10, $o)", parameters = new { q = "tags", o = new { Similarity = "dot" } },
        }), HttpStatusCode.BadRequest, "holds binary vectors");
        await HttpJson.AssertProblem(await Http.PutAsJsonAsync("indexes/Posts/BadBits", new
        {
            maps = new[] { "map('Posts', p => ({ V: createVector(embedding.text(p.Title)) }))" },
            fields = new { V = new { vector = new { quantization = "bits" } } },
        }), HttpStatusCode.BadRequest, "quantization \"none\", \"int8\" or \"binary\"");

        static byte[] Bits(float[] v)
        {
            var b = new byte[(v.Length + 7) / 8];
            for (var i = 0; i < v.Length; i++) if (v[i] >= 0) b[i / 8] |= (byte)(1 << (7 - i % 8));
            return b;
        }
        static int Differing(byte[] a, byte[] b) => a.Zip(b, (x, y) => System.Numerics.BitOperations.PopCount((uint)(x ^ y))).Sum();
    }

    private async Task<List<(string Id, float Score)>> ScoredAsync(string rql, object parameters)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = rql, parameters, pageSize = 100, waitForNonStaleResults = true, timeoutMs = 50_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        return (await r.JsonAsync()).GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata"))
            .Select(m => (m.GetProperty("@id").GetString()!, m.GetProperty("@index-score").GetSingle())).ToList();
    }

    [Fact]
    public async Task A_static_map_embeds_with_embedding_text_and_the_query_embeds_its_text_with_the_same_model()
    {
        await Http.PutIndexAsync("Posts/Semantic", """
            { "maps": ["map('Posts', p => ({ PostTypeId: p.PostTypeId, Text: createVector(embedding.text(p.Title ? p.Title + ' ' + p.Tags : null)) }))"] }
            """);
        var found = await TopAsync("from index 'Posts/Semantic' where vector.search(embedding.text(Text), $q, 0.3) and PostTypeId = 1",
            new { q = "one person operating several user profiles" });
        Assert.Contains("posts/3312", found);
    }

    [Fact]
    public async Task Bad_text_fails_only_itself()
    {
        // Empty, whitespace or missing text: no vector (never found), no error; a 1 MB title is embedded from its first 16 KB.
        var megabyte = string.Concat(Enumerable.Repeat("handling several accounts of one user ", 28_000));
        foreach (var (id, title) in new[] { ("semantic/empty", ""), ("semantic/blank", "  \n "), ("semantic/big", megabyte) })
            Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(id, JsonSerializer.Serialize(new { Title = title }))).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("semantic/none", "{}")).StatusCode);
        var found = await TopAsync("from Semantic where vector.search(embedding.text(Title), $q, 0.1)", new { q = "one user with multiple accounts" }, 10);
        Assert.Equal(["semantic/big"], found);

        // A map giving embedding.text something that is not text fails that document, with the reason.
        await Http.PutIndexAsync("Semantic/Numbers", """{ "maps": ["map('Semantic', s => ({ V: createVector(embedding.text(5)) }))"] }""");
        await Http.QueryNonStaleAsync("from index 'Semantic/Numbers'");
        var status = (await (await Http.GetAsync("indexes/Semantic/Numbers")).JsonAsync()).GetProperty("status");
        Assert.Equal(4, status.GetProperty("errorCount").GetInt64());
        Assert.All(status.GetProperty("errors").EnumerateArray(), e => Assert.Contains("embedding.text takes text or an array of texts, not Number", e.GetProperty("message").GetString()));

        async Task Refused(string rql, object parameters, string detail) =>
            await HttpJson.AssertProblem(await Http.PostAsJsonAsync("queries", new { query = rql, parameters }), HttpStatusCode.BadRequest, detail);
        await Refused("from Posts where vector.search(embedding.text(Title), $q)", new { q = " " }, "the text to search for is empty");
        await Refused("from Posts where vector.search(embedding.text(Title), $q)", new { q = new[] { 0.1, 0.2 } }, "the query's value must be a string");
    }
}
