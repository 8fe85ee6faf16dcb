using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Queries.Conformance;

namespace Magpie.Tests.Queries.Search;

/// <summary>
/// Semantic search through an embedding connection (an OpenAI-compatible provider) instead of the built-in model, embedded Magpie
/// against a local OpenAI-compatible server that answers with the built-in model: the answers must be the built-in model's, the
/// provider's outages must pause the index without losing or failing a document, and its refusals must fail only what it refused.
/// </summary>
public sealed class EmbeddingConnectionSearchTests : IAsyncLifetime
{
    private OpenAiCompatibleServer _server = null!;
    private MagpieProcess _magpie = null!;
    private HttpClient Http => _magpie.Http;

    /// <summary>A slice of the sample's questions: enough to rank, quick to embed twice.</summary>
    private static readonly List<SamplePost> Posts = SamplePost.Load().Where(p => !string.IsNullOrWhiteSpace(p.Title)).Take(300).ToList();

    public async Task InitializeAsync()
    {
        _server = await OpenAiCompatibleServer.StartAsync();
        _magpie = await MagpieProcess.StartAsync();
        var put = await Http.BulkPutAsync(Posts.Select(p => (p.Id, JsonSerializer.Serialize(new { p.Title, p.Tags, PostTypeId = p.Type }))));
        Assert.True(put.IsSuccessStatusCode, await put.Content.ReadAsStringAsync());
        var connection = await Http.PutAsJsonAsync("embeddings/connections/local", new
        {
            type = "openai", url = _server.Url.ToString(), model = "all-minilm", apiKey = "sk-test-secret", batchSize = 16, maxRetries = 1,
        });
        Assert.Equal(HttpStatusCode.NoContent, connection.StatusCode);
    }

    public async Task DisposeAsync()
    {
        await _magpie.DisposeAsync();
        await _server.DisposeAsync();
    }

    private async Task<JsonElement> QueryAsync(string rql, object parameters, int pageSize = 10)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = rql, parameters, pageSize, waitForNonStaleResults = true, timeoutMs = 120_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var body = await r.JsonAsync();
        Assert.False(body.GetProperty("isStale").GetBoolean(), rql);
        return body;
    }

    private static async Task WaitAsync(Func<Task<bool>> done, string what)
    {
        var deadline = DateTime.UtcNow.AddSeconds(120);
        while (!await done()) { Assert.True(DateTime.UtcNow < deadline, $"waited 120 s for {what}"); await Task.Delay(250); }
    }

    private static List<(string Id, float Score)> Ranked(JsonElement body) => body.GetProperty("results").EnumerateArray()
        .Select(d => (d.GetProperty("@metadata").GetProperty("@id").GetString()!, d.GetProperty("@metadata").GetProperty("@index-score").GetSingle())).ToList();

    [Fact]
    public async Task A_connection_embeds_the_field_and_the_query_text_as_the_model_behind_it_does()
    {
        // Set at runtime, its key never shown back; what is wrong with one is named.
        var shown = await (await Http.GetAsync("embeddings/connections/local")).JsonAsync();
        Assert.Equal("***", shown.GetProperty("apiKey").GetString());
        Assert.DoesNotContain("sk-test-secret", await Http.GetStringAsync("embeddings/connections"));
        await HttpJson.AssertProblem(await Http.PutAsJsonAsync("embeddings/connections/bad", new { type = "openai", url = "localhost", batchSize = 0 }),
            HttpStatusCode.BadRequest, "\"url\" must be an http:// or https:// address");
        await HttpJson.AssertProblem(await Http.PutAsJsonAsync("embeddings/connections/has%20space", new { type = "openai", url = "http://x/v1", model = "m" }),
            HttpStatusCode.BadRequest, "letters, digits or '_'");

        foreach (var text in new[] { "one person operating several user profiles", "which sources can answers cite" })
        {
            var viaConnection = Ranked(await QueryAsync("from Posts where vector.search(embedding.text(Title, ai.task('local')), $q, 0, 10)", new { q = text }));
            var viaModel = Ranked(await QueryAsync("from Posts where vector.search(embedding.text(Title), $q, 0, 10)", new { q = text }));
            Assert.Equal(10, viaConnection.Count);
            Assert.Equal(viaModel.Select(r => r.Id), viaConnection.Select(r => r.Id));
            for (var i = 0; i < 10; i++) Assert.Equal(viaModel[i].Score, viaConnection[i].Score, 3);
        }
        // Its own automatic index (vectors of different models never share a field), filled in the connection's batches.
        var indexes = await Http.GetStringAsync("indexes");
        Assert.Contains("Auto/Posts/ByTitle_embedding_by_local", indexes);
        Assert.All(_server.Requests, r => Assert.InRange(r.Texts, 1, 16));
        Assert.True(_server.Requests.Sum(r => r.Texts) >= Posts.Count);

        // A static map names the connection the same way.
        await Http.PutIndexAsync("Posts/ByMeaning", """{ "maps": ["map('Posts', p => ({ Meaning: createVector(embedding.text(p.Title, ai.task('local'))) }))"] }""");
        var own = Posts[7];
        var top = Ranked(await QueryAsync("from index 'Posts/ByMeaning' where vector.search(embedding.text(Meaning, ai.task('local')), $q)", new { q = own.Title }, 1)).Single();
        Assert.Equal(own.Id, top.Id);
        Assert.True(top.Score >= 0.999f, $"{top.Score}");
        // Asked with another embedder (the built-in model, also 384 dimensions): refused, not ranked across two models' spaces.
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("queries", new
        {
            query = "from index 'Posts/ByMeaning' where vector.search(embedding.text(Meaning), $q)", parameters = new { q = own.Title },
        }), HttpStatusCode.BadRequest, "the field 'Meaning' holds vectors made by the embedding connection 'local'; the query's text was embedded by the built-in model");

        // The vectors made are kept by text: a reset, a replacement built side by side, and a rebuild after a kill -9 and a
        // restart ask the provider for none of them again.
        var asked = _server.Requests.Count;
        Assert.Equal(HttpStatusCode.NoContent, (await Http.PostAsync("indexes/Posts/ByMeaning/reset", null)).StatusCode);
        Assert.Equal(own.Id, Ranked(await QueryAsync("from index 'Posts/ByMeaning' where vector.search(embedding.text(Meaning, ai.task('local')), $q)", new { q = own.Title }, 1)).Single().Id);
        await Http.PutIndexAsync("Posts/ByMeaning", """{ "maps": ["map('Posts', p => ({ Tags: p.Tags, Meaning: createVector(embedding.text(p.Title, ai.task('local'))) }))"] }""");
        await WaitAsync(async () => !(await Http.GetStringAsync("indexes/Posts/ByMeaning")).Contains("\"replacement\": {"), "the replacement to take over");
        Assert.Equal(own.Id, Ranked(await QueryAsync("from index 'Posts/ByMeaning' where vector.search(embedding.text(Meaning, ai.task('local')), $q) and Tags = $t", new { q = own.Title, t = own.Tags[0] }, 1)).Single().Id);
        _magpie.Crash();
        await _magpie.StartAsync();
        Assert.Equal(HttpStatusCode.NoContent, (await Http.PostAsync("indexes/Posts/ByMeaning/reset", null)).StatusCode);
        var total = await QueryAsync("from index 'Posts/ByMeaning' where vector.search(embedding.text(Meaning, ai.task('local')), $q, -1, 1024)", new { q = own.Title }, 1);
        Assert.Equal(Posts.Count, total.GetProperty("totalResults").GetInt32());
        Assert.Equal(asked + 1, _server.Requests.Count);   // the query's own text only (a restart empties the query cache)

        // int8 and binary forms with a connection: each its own automatic index, held as asked.
        foreach (var (form, quantization) in new[] { ("text_i8", "int8"), ("text_i1", "binary") })
        {
            await QueryAsync($"from Posts where vector.search(embedding.{form}(Title, ai.task('local')), $q)", new { q = own.Title });
            var name = $"Auto/Posts/ByTitle_embedding_{form[^2..]}_by_local";
            var definition = await (await Http.GetAsync($"indexes/{name}")).JsonAsync();
            Assert.Equal(quantization, definition.GetProperty("definition").GetProperty("fields").GetProperty($"Title_embedding_{form[^2..]}_by_local")
                .GetProperty("vector").GetProperty("quantization").GetString());
        }

        // A connection that does not exist is refused before any index is made for it.
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("queries", new { query = "from Posts where vector.search(embedding.text(Title, ai.task('nope')), 'x')" }),
            HttpStatusCode.BadRequest, "there is no embedding connection 'nope'");
        Assert.DoesNotContain("by_nope", await Http.GetStringAsync("indexes"));
    }

    [Fact]
    public async Task A_provider_outage_pauses_the_index_and_loses_nothing_and_a_refusal_fails_only_its_document()
    {
        await Http.PutIndexAsync("Posts/Meaning", """{ "maps": ["map('Posts', p => ({ Meaning: createVector(embedding.text(p.Title, ai.task('local'))) }))"] }""");
        await Http.QueryNonStaleAsync("from index 'Posts/Meaning'");

        // Down for 10 seconds: new posts wait, the index says why, and not one of them is counted as failed.
        _server.FailUntil = DateTime.UtcNow.AddSeconds(10);
        var added = Enumerable.Range(0, 10).Select(i => ($"posts/9000{i}", $"How should moderators handle duplicate accounts, case {i}?")).ToList();
        Assert.True((await Http.BulkPutAsync(added.Select(a => (a.Item1, JsonSerializer.Serialize(new { Title = a.Item2 }))))).IsSuccessStatusCode);
        JsonElement status;
        var deadline = DateTime.UtcNow.AddSeconds(20);
        do status = (await (await Http.GetAsync("indexes/Posts/Meaning")).JsonAsync()).GetProperty("status");
        while (status.GetProperty("failure").ValueKind == JsonValueKind.Null && DateTime.UtcNow < deadline && await Task.Delay(200).ContinueWith(_ => true));
        Assert.Contains("embedding connection local", status.GetProperty("failure").GetString());
        Assert.Contains("500", status.GetProperty("failure").GetString());
        Assert.Equal(0, status.GetProperty("errorCount").GetInt64());

        // A query's text the provider can't embed now: 503, naming the connection.
        Assert.True(DateTime.UtcNow < _server.FailUntil.AddSeconds(-3), $"the index said why only at {DateTime.UtcNow:HH:mm:ss.fff}, the outage ending at {_server.FailUntil:HH:mm:ss.fff}");
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("queries", new
            {
                query = "from index 'Posts/Meaning' where vector.search(embedding.text(Meaning, ai.task('local')), $q)", parameters = new { q = "a text never asked before" },
            }), HttpStatusCode.ServiceUnavailable, "embedding connection local");

        // Back up: every post written during the outage is found by its own title, and nothing failed.
        if (_server.FailUntil - DateTime.UtcNow is { TotalMilliseconds: > 0 } left) await Task.Delay(left);
        foreach (var (id, title) in added.Take(3))
            Assert.Equal(id, Ranked(await QueryAsync("from index 'Posts/Meaning' where vector.search(embedding.text(Meaning, ai.task('local')), $q)", new { q = title }, 1)).Single().Id);
        var total = await QueryAsync("from index 'Posts/Meaning'", new { }, 1);
        Assert.Equal(Posts.Count + added.Count, total.GetProperty("totalResults").GetInt32());
        status = (await (await Http.GetAsync("indexes/Posts/Meaning")).JsonAsync()).GetProperty("status");
        Assert.Equal(0, status.GetProperty("errorCount").GetInt64());
        Assert.Equal("running", status.GetProperty("state").GetString());

        // A text the provider refuses fails its own document, with the provider's reason; the one written beside it is indexed.
        Assert.True((await Http.BulkPutAsync([
            ("posts/90100", JsonSerializer.Serialize(new { Title = $"{OpenAiCompatibleServer.RefusedMarker} please" })),
            ("posts/90101", JsonSerializer.Serialize(new { Title = "Voting rings and serial upvotes" })),
        ])).IsSuccessStatusCode);
        Assert.Equal("posts/90101", Ranked(await QueryAsync("from index 'Posts/Meaning' where vector.search(embedding.text(Meaning, ai.task('local')), $q)", new { q = "Voting rings and serial upvotes" }, 1)).Single().Id);
        status = (await (await Http.GetAsync("indexes/Posts/Meaning")).JsonAsync()).GetProperty("status");
        Assert.Equal(1, status.GetProperty("errorCount").GetInt64());
        var error = status.GetProperty("errors").EnumerateArray().Single();
        Assert.Equal("posts/90100", error.GetProperty("documentId").GetString());
        Assert.Contains("this text is refused", error.GetProperty("message").GetString());
    }
}
