using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Queries.Conformance;
using Xunit.Abstractions;

namespace Magpie.Tests.Embeddings;

/// <summary>
/// Kafka mode: the vectors one indexer made reach every other through magpie.embeddings, so an indexer that starts with an empty
/// disk builds the index without asking the provider again (counted at a local OpenAI-compatible server).
/// </summary>
public sealed class SharedEmbeddingCacheTests(ITestOutputHelper output)
{
    [Fact]
    public async Task An_indexer_starting_with_an_empty_disk_embeds_nothing_another_indexer_already_embedded()
    {
        await using var provider = await OpenAiCompatibleServer.StartAsync();
        await using var broker = await KafkaBroker.StartOwnedAsync();
        var kafka = broker.BootstrapServers;
        var environment = new Dictionary<string, string> { ["MAGPIE__KAFKAPARTITIONS"] = "2" };
        await using var ingest = await MagpieProcess.StartAsync(kafka, "ingest", environment: environment);
        var posts = SamplePost.Load().Where(p => !string.IsNullOrWhiteSpace(p.Title)).Take(200).ToList();
        var put = await ingest.Http.BulkPutAsync(posts.Select(p => (p.Id, JsonSerializer.Serialize(new { p.Title }))));
        Assert.True(put.IsSuccessStatusCode, await put.Content.ReadAsStringAsync());
        await SplitDeployment.RelayCaughtUpAsync(ingest);

        await using var first = await MagpieProcess.StartAsync(kafka, "indexer", environment: environment);
        await using var query = await MagpieProcess.StartAsync(kafka, "query", environment: environment);
        var connection = await first.Http.PutAsJsonAsync("embeddings/connections/local", new { type = "openai", url = provider.Url.ToString(), model = "all-minilm", batchSize = 32 });
        Assert.Equal(HttpStatusCode.NoContent, connection.StatusCode);

        const string Rql = "from Posts where vector.search(embedding.text(Title, ai.task('local')), $q, -1, 1024)";
        var before = await AllFoundAsync(query, Rql, posts.Count);
        var asked = provider.Texts.Count;
        Assert.InRange(asked, posts.Select(p => p.Title).Distinct().Count(), posts.Count + 1);

        // The indexer and its disk gone; a new one, with an empty data directory, takes its shards.
        first.Crash();
        await using var second = await MagpieProcess.StartAsync(kafka, "indexer", environment: environment);
        var after = await AllFoundAsync(query, Rql, posts.Count);
        Assert.True(asked == provider.Texts.Count, $"asked again: {string.Join(" | ", provider.Texts.Skip(asked))}");
        // The same vectors: the same ranking, the same scores.
        Assert.Equal(before.Select(r => r.Id).Take(20), after.Select(r => r.Id).Take(20));
        for (var i = 0; i < 20; i++) Assert.Equal(before[i].Score, after[i].Score, 5);
        output.WriteLine($"{asked} texts embedded by the provider for {posts.Count} posts, none again after the indexer was replaced");
    }

    /// <summary>The query's answer once every post is found through the index (shards may move meanwhile: asked again until then).</summary>
    private static async Task<List<(string Id, float Score)>> AllFoundAsync(MagpieProcess query, string rql, int count)
    {
        var deadline = DateTime.UtcNow.AddMinutes(4);
        while (true)
        {
            var r = await query.Http.PostAsJsonAsync("queries", new
            {
                query = rql, parameters = new { q = "one person operating several user profiles" }, pageSize = 1024, waitForNonStaleResults = true, timeoutMs = 30_000,
            });
            var text = await r.Content.ReadAsStringAsync();
            if (r.IsSuccessStatusCode && JsonDocument.Parse(text).RootElement is var body && !body.GetProperty("isStale").GetBoolean()
                && body.GetProperty("totalResults").GetInt32() == count)
                return body.GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata"))
                    .Select(m => (m.GetProperty("@id").GetString()!, m.GetProperty("@index-score").GetSingle())).ToList();
            Assert.True(DateTime.UtcNow < deadline, $"not every post found within 4 minutes: {(int)r.StatusCode} {text[..Math.Min(text.Length, 400)]}");
            await Task.Delay(500);
        }
    }
}
