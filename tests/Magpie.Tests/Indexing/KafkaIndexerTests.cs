using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Xml.Linq;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;
using Magpie.Tests.Queries;
using Xunit.Abstractions;
using static Magpie.Tests.Fixtures.SplitDeployment;

namespace Magpie.Tests.Indexing;

/// <summary>
/// The split deployment on its own broker whose magpie.changes has 4 partitions: an ingest process, indexer
/// processes (`--target indexer`) in consumer groups, query processes (`--target query`) fanning out to them.
/// Definitions travel through magpie.indexes: defined once, every indexer of every group builds the index.
/// </summary>
public sealed class KafkaIndexerTests(ITestOutputHelper output)
{
    private static readonly Dictionary<string, string> FourPartitions = new() { ["MAGPIE__KAFKAPARTITIONS"] = "4" };

    private static Dictionary<string, string> Group(string group) => new(FourPartitions) { ["MAGPIE__INDEXERGROUP"] = group };

    private static string[] TagsOf(XElement p) => ((string?)p.Attribute("Tags") ?? "").Trim('<', '>').Split("><", StringSplitOptions.RemoveEmptyEntries);

    [Fact]
    public async Task Two_indexers_in_one_group_answer_exactly_what_one_indexer_answers_and_what_the_XML_says()
    {
        await using var broker = await KafkaBroker.StartOwnedAsync();
        var kafka = broker.BootstrapServers;
        // Ingest waits (?waitForIndexes) for the pair's group; the solo group is a second, independent deployment.
        await using var ingest = await MagpieProcess.StartAsync(kafka, target: "ingest", environment: Group("pair"));
        var (exit, imported) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", ingest.BaseUrl.ToString());
        Assert.True(exit == 0, imported);

        await using var pairA = await MagpieProcess.StartAsync(kafka, target: "indexer", environment: Group("pair"));
        await using var pairB = await MagpieProcess.StartAsync(kafka, target: "indexer", environment: Group("pair"));
        await using var pairQuery = await MagpieProcess.StartAsync(kafka, target: "query", environment: Group("pair"));
        await using var solo = await MagpieProcess.StartAsync(kafka, target: "indexer", environment: Group("solo"));
        await using var soloQuery = await MagpieProcess.StartAsync(kafka, target: "query", environment: Group("solo"));

        // Defined once, on one indexer: magpie.indexes carries it to the other group too.
        var put = await pairA.Http.PutAsync("indexes/Posts/ByTags", HttpJson.Json(ImportedSampleFixture.Index));
        Assert.Equal(HttpStatusCode.NoContent, put.StatusCode);
        var bad = await pairB.Http.PutAsync("indexes/Broken", HttpJson.Json("""{"maps":["map('Posts', p => ({ A: p.A )"]}"""));
        Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);

        var posts = new StackExchangeXml(RepoPaths.StackExchangeSample).Posts;
        var all = "from index 'Posts/ByTags'";
        Assert.Equal(posts.Count, (await NonStaleAsync(pairQuery, all)).GetProperty("totalResults").GetInt64());
        Assert.Equal(posts.Count, (await NonStaleAsync(soloQuery, all)).GetProperty("totalResults").GetInt64());

        // The pair split the four partitions between them; the solo indexer holds all four.
        var pairShards = new[] { pairA, pairB }.Select(p => Partitions(p).Result).ToList();
        output.WriteLine($"pair A holds [{string.Join(",", pairShards[0])}], B holds [{string.Join(",", pairShards[1])}]");
        Assert.All(pairShards, s => Assert.NotEmpty(s));
        Assert.Equal([0, 1, 2, 3], pairShards.SelectMany(s => s).Order());
        Assert.Equal([0, 1, 2, 3], await Partitions(solo));

        var discussion = posts.Where(p => TagsOf(p).Contains("discussion")).Select(p => "posts/" + (string)p.Attribute("Id")!).Order(StringComparer.Ordinal).ToList();
        Assert.Equal(discussion, Ids(await QueryAsync(pairQuery, all + " where Tags = 'discussion'")).Order(StringComparer.Ordinal));

        string[] queries =
        [
            all + " where Tags = 'discussion' order by Score desc",
            all + " where Type = 1 and CreationDate >= '2012-01-01' order by Score desc select Title, Score as Points",
            all + " where Score between 2 and 10 order by CreationDate desc",
            all + " where startsWith(Tags, 'feature') or exists(Title) order by Title",
            all,
        ];
        foreach (var rql in queries)
        {
            var pair = await WalkAsync(pairQuery, rql);
            var one = await WalkAsync(soloQuery, rql);
            output.WriteLine($"{rql}: {pair.Count} results");
            Assert.NotEmpty(pair);
            Assert.Equal(one, pair);
            Assert.Equal(pair, await StreamAsync(pairQuery, rql));
        }
        // Ordered by score(), two deployments may order near-equal scores differently: BM25 counts the entries an update
        // replaced until a merge drops them, and which ones are dropped depends on each indexer's batches (as in Lucene,
        // Elasticsearch and RavenDB). What holds: the same hits, and each deployment's merge of its owners follows its scores.
        var scored = all + " where search(Title, 'source code') order by score()";
        var pairScored = await ScoredWalkAsync(pairQuery, scored);
        var soloScored = await ScoredWalkAsync(soloQuery, scored);
        output.WriteLine($"{scored}: pair {string.Join(", ", pairScored)}; solo {string.Join(", ", soloScored)}");
        Assert.NotEmpty(pairScored);
        Assert.Equal(soloScored.Select(h => h.Id).Order(StringComparer.Ordinal), pairScored.Select(h => h.Id).Order(StringComparer.Ordinal));
        foreach (var hits in new[] { pairScored, soloScored })
            Assert.Equal(hits.OrderByDescending(h => h.Score).ThenBy(h => h.Id, StringComparer.Ordinal), hits);
        Assert.Equal(pairScored.Select(h => h.Id), await StreamAsync(pairQuery, scored));

        // Facets: each owner adds up its shards, the query process adds up the owners: the same figures as one indexer, and as the XML.
        var facetQuery = all + " select facet(Tags, sum(Score), max(Score)), facet(Score < 2, Score between 2 and 9, Score >= 10, avg(Score)) as Scores, facet(Type)";
        var pairFacets = (await QueryAsync(pairQuery, facetQuery)).GetProperty("facets");
        Assert.Equal((await QueryAsync(soloQuery, facetQuery)).GetProperty("facets").GetRawText(), pairFacets.GetRawText());
        var tagCounts = posts.SelectMany(p => TagsOf(p).Select(t => (Tag: t, Score: (long)p.Attribute("Score")!))).GroupBy(x => x.Tag)
            .OrderByDescending(g => g.Count()).ThenBy(g => g.Key, StringComparer.Ordinal).Select(g => (g.Key, (long)g.Count(), (double)g.Sum(x => x.Score))).ToList();
        Assert.Equal(tagCounts, pairFacets[0].GetProperty("values").EnumerateArray()
            .Select(v => (v.GetProperty("value").GetString()!, v.GetProperty("count").GetInt64(), v.GetProperty("sum").GetProperty("Score").GetDouble())));
        Assert.Equal([posts.Count(p => (long)p.Attribute("Score")! < 2), posts.Count(p => (long)p.Attribute("Score")! is >= 2 and <= 9), posts.Count(p => (long)p.Attribute("Score")! >= 10)],
            pairFacets[1].GetProperty("values").EnumerateArray().Select(v => v.GetProperty("count").GetInt64()));

        // Each stream held a snapshot on both indexers of the pair and let it go when it ended.
        foreach (var indexer in new[] { pairA, pairB, solo })
            Assert.Equal(0, (await indexer.Http.GetFromJsonAsync<JsonElement>("indexes/Posts/ByTags")).GetProperty("status").GetProperty("heldSnapshots").GetInt32());
        var top = await QueryAsync(pairQuery, queries[1] + " limit 5");
        var expected = posts.Where(p => (string)p.Attribute("PostTypeId")! == "1" && string.CompareOrdinal((string)p.Attribute("CreationDate")!, "2012-01-01") >= 0)
            .OrderByDescending(p => (long)p.Attribute("Score")!).ThenBy(p => "posts/" + (string)p.Attribute("Id")!, StringComparer.Ordinal).Take(5).ToList();
        Assert.Equal(expected.Select(p => (long)p.Attribute("Score")!), top.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("Points").GetInt64()));

        // Updates and deletes reach both deployments; waitForNonStaleResults reads them back.
        var first = discussion.Take(3).ToList();
        foreach (var id in first.Take(2)) Assert.True((await ingest.Http.DeleteAsync(id, null)).IsSuccessStatusCode);
        var patched = await ingest.Http.PatchAsync(first[2], """[{"op":"replace","path":"/Tags","value":"<moved>"}]""");
        Assert.True(patched.IsSuccessStatusCode, await patched.Content.ReadAsStringAsync());
        // waitForNonStaleResults covers what is on magpie.changes: first the relay publishes the writes.
        await RelayCaughtUpAsync(ingest);
        foreach (var q in new[] { pairQuery, soloQuery })
        {
            var after = await QueryAsync(q, all + " where Tags = 'discussion'");
            Assert.Equal(discussion.Skip(3), Ids(after).Order(StringComparer.Ordinal));
            Assert.Equal([first[2]], Ids(await QueryAsync(q, all + " where Tags = 'moved'")));
        }

        // Read-your-writes across processes: ingest answers once the pair's indexer holding the write's partition has it.
        for (var i = 0; i < 5; i++)
        {
            var written = await ingest.Http.PutAsync($"docs/posts/ryw-{i}?waitForIndexes=true", HttpJson.Json($$"""{"Title":"ryw","Tags":"<ryw-{{i}}>","PostTypeId":1}"""));
            Assert.Equal(HttpStatusCode.Created, written.StatusCode);
            Assert.Equal("current", written.Headers.GetValues("Magpie-Indexes").Single());
            var found = await pairQuery.Http.PostAsJsonAsync("queries", new { query = all + $" where Tags = 'ryw-{i}'" });
            Assert.Equal([$"posts/ryw-{i}"], Ids(await found.JsonAsync()));
        }
    }

    [Fact]
    public async Task An_indexer_killed_mid_batch_resumes_to_exactly_what_a_fresh_rebuild_holds()
    {
        await using var broker = await KafkaBroker.StartOwnedAsync();
        var kafka = broker.BootstrapServers;
        await using var ingest = await MagpieProcess.StartAsync(kafka, target: "ingest", environment: FourPartitions);
        var (exit, produced) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "synthetic", "--count", "40000", "--seed", "11", "--url", ingest.BaseUrl.ToString());
        Assert.True(exit == 0, produced);

        await using var crashing = await MagpieProcess.StartAsync(kafka, target: "indexer", environment: Group("crash"));
        await using var crashingQuery = await MagpieProcess.StartAsync(kafka, target: "query", environment: Group("crash"));
        var put = await crashing.Http.PutAsync("indexes/Synthetic", HttpJson.Json("""
            { "maps": ["map('Posts', p => ({ Title: p.Title, Tags: p.Tags, Score: p.Score }))"], "fields": { "Title": { "indexing": "search" } } }
            """));
        Assert.Equal(HttpStatusCode.NoContent, put.StatusCode);

        // Kill -9 while it is writing: some entries indexed, far from all.
        long entries = 0;
        var deadline = DateTime.UtcNow.AddMinutes(2);
        while ((entries = await EntriesAsync(crashing)) < 2_000 && DateTime.UtcNow < deadline) await Task.Delay(20);
        crashing.Crash();
        output.WriteLine($"killed with {entries} of 40000 entries indexed");
        Assert.InRange(entries, 2_000, 39_999);
        await crashing.StartAsync();
        var restarted = System.Diagnostics.Stopwatch.StartNew();

        await using var fresh = await MagpieProcess.StartAsync(kafka, target: "indexer", environment: Group("fresh"));
        await using var freshQuery = await MagpieProcess.StartAsync(kafka, target: "query", environment: Group("fresh"));
        Assert.Equal(40_000, (await NonStaleAsync(crashingQuery, "from index 'Synthetic'")).GetProperty("totalResults").GetInt64());
        output.WriteLine($"restarted indexer caught up {restarted.Elapsed.TotalSeconds:F1} s after its restart");
        Assert.Equal(40_000, (await NonStaleAsync(freshQuery, "from index 'Synthetic'")).GetProperty("totalResults").GetInt64());
        Assert.Equal(40_000, await EntriesAsync(crashing));   // no duplicate entries
        Assert.Equal(40_000, await EntriesAsync(fresh));

        foreach (var rql in new[] { "from index 'Synthetic' order by Score desc", "from index 'Synthetic' where search(Title, 'cache deploy') order by Title" })
        {
            var resumed = await StreamAsync(crashingQuery, rql);
            Assert.Equal(await StreamAsync(freshQuery, rql), resumed);
            Assert.Equal(resumed.Count, resumed.Distinct().Count());
        }
    }

    private static async Task<JsonElement> QueryAsync(MagpieProcess q, string rql, string? cursor = null, int timeoutMs = 45_000)
    {
        var r = await q.Http.PostAsJsonAsync("queries", new { query = rql, pageSize = 1000, cursor, waitForNonStaleResults = true, timeoutMs });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var body = await r.JsonAsync();
        Assert.False(body.GetProperty("isStale").GetBoolean(), $"stale after {timeoutMs} ms: {rql}");
        return body;
    }

    private static List<string> Ids(JsonElement response) =>
        response.GetProperty("results").EnumerateArray().Select(Id).ToList();

    /// <summary>A result's identity: the document id, or the projection itself.</summary>
    private static string Id(JsonElement r) => r.TryGetProperty("@metadata", out var m) ? m.GetProperty("@id").GetString()! : r.GetRawText();

    /// <summary>Every result, page by page through cursors.</summary>
    private static async Task<List<string>> WalkAsync(MagpieProcess q, string rql)
    {
        var all = new List<string>();
        string? cursor = null;
        do
        {
            var page = await QueryAsync(q, rql, cursor);
            all.AddRange(Ids(page));
            cursor = page.GetProperty("nextCursor").GetString();
        } while (cursor is not null);
        return all;
    }

    private static async Task<List<(string Id, float Score)>> ScoredWalkAsync(MagpieProcess q, string rql)
    {
        var all = new List<(string, float)>();
        string? cursor = null;
        do
        {
            var page = await QueryAsync(q, rql, cursor);
            all.AddRange(page.GetProperty("results").EnumerateArray().Select(r => (Id(r), r.GetProperty("@metadata").GetProperty("@index-score").GetSingle())));
            cursor = page.GetProperty("nextCursor").GetString();
        } while (cursor is not null);
        return all;
    }

    private static async Task<List<string>> StreamAsync(MagpieProcess q, string rql)
    {
        // A whole stream in one response: its own client, so a busy machine (the full suite on 2 cores) is not cut at the shared 60 s.
        using var http = new HttpClient { BaseAddress = q.BaseUrl, Timeout = TimeSpan.FromMinutes(4) };
        var response = await http.PostAsJsonAsync("streams/queries", new { query = rql });
        Assert.True(response.IsSuccessStatusCode, await response.Content.ReadAsStringAsync());
        return (await response.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(l => Id(JsonDocument.Parse(l).RootElement)).ToList();
    }

    private static async Task<List<int>> Partitions(MagpieProcess indexer)
    {
        var status = await indexer.Http.GetFromJsonAsync<JsonElement>("indexes/Posts/ByTags");
        return status.GetProperty("status").GetProperty("shards").EnumerateArray().Select(s => s.GetProperty("partition").GetInt32()).Order().ToList();
    }

    private static async Task<long> EntriesAsync(MagpieProcess indexer)
    {
        try { return (await indexer.Http.GetFromJsonAsync<JsonElement>("indexes/Synthetic")).GetProperty("status").GetProperty("entries").GetInt64(); }
        catch (HttpRequestException) { return 0; }
    }
}
