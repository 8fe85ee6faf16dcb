using System.Net.Http.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Queries.Conformance;

/// <summary>The conformance cases in Kafka mode, sharded: ingest, two indexers splitting four partitions, a query process merging them.</summary>
public sealed class KafkaConformanceFixture : IAsyncLifetime
{
    private KafkaBroker _broker = null!;
    private readonly List<MagpieProcess> _processes = [];
    public MagpieProcess Query { get; private set; } = null!;
    public MagpieProcess Ingest { get; private set; } = null!;
    public MagpieProcess Indexer { get; private set; } = null!;
    public MagpieProcess OtherIndexer { get; private set; } = null!;
    public List<SamplePost> Posts { get; } = SamplePost.Load();

    private static Dictionary<string, string> Group => new() { ["MAGPIE__KAFKAPARTITIONS"] = "4", ["MAGPIE__INDEXERGROUP"] = "conformance" };

    public async Task InitializeAsync()
    {
        _broker = await KafkaBroker.StartOwnedAsync();
        var kafka = _broker.BootstrapServers;
        var ingest = Ingest = await Start(kafka, "ingest");
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", ingest.BaseUrl.ToString());
        if (exit != 0) throw new InvalidOperationException(output);
        var indexer = Indexer = await Start(kafka, "indexer");
        OtherIndexer = await Start(kafka, "indexer");
        Query = await Start(kafka, "query", new() { ["MAGPIE__INGESTURL"] = ingest.BaseUrl.ToString() });
        await indexer.Http.PutIndexAsync(RqlConformance.StaticIndex, RqlConformance.StaticDefinition);
        await SplitDeployment.RelayCaughtUpAsync(ingest);
    }

    private async Task<MagpieProcess> Start(string kafka, string target, Dictionary<string, string>? more = null)
    {
        var environment = Group;
        foreach (var (k, v) in more ?? []) environment[k] = v;
        var process = await MagpieProcess.StartAsync(kafka, target, environment: environment);
        _processes.Add(process);
        return process;
    }

    public async Task DisposeAsync()
    {
        foreach (var p in _processes) await p.DisposeAsync();
        await _broker.DisposeAsync();
    }
}

public sealed class KafkaConformanceTests(KafkaConformanceFixture fx) : IClassFixture<KafkaConformanceFixture>
{
    [Theory]
    [MemberData(nameof(RqlConformanceTests.Names), MemberType = typeof(RqlConformanceTests))]
    public async Task Sharded_answers_are_the_independently_computed_ones(string name)
    {
        var (rql, expected) = RqlConformance.Cases[name];
        var want = fx.Posts.Where(expected).Select(p => p.Id).Order(StringComparer.Ordinal).ToList();
        Assert.Equal(want, await RqlAnswers.IdsAsync(fx.Query.Http, rql));
    }

    [Fact]
    public async Task Dynamic_group_by_runs_as_an_automatic_map_reduce_across_the_indexers()
    {
        await GroupByCases.Posts_per_owner_with_their_score_equal_linq(fx.Query.Http, fx.Posts);
        await GroupByCases.Badges_per_name_through_an_array_equal_linq(fx.Query.Http);
    }

    [Fact]
    public Task A_side_by_side_rebuild_switches_every_indexer_at_once_under_query_load() =>
        Indexing.SideBySideCases.A_changed_definition_serves_only_once_built(fx.Indexer.Http, fx.Query.Http, "Posts/KafkaSideBySide", fx.Posts.Count);

    [Fact]
    public Task A_replacement_is_swapped_in_on_every_indexer_by_hand() =>
        Indexing.SideBySideCases.A_replacement_is_swapped_in_or_cancelled_by_hand(fx.OtherIndexer.Http, fx.Query.Http, "Posts/KafkaSwapped");

    [Fact]
    public async Task Update_and_delete_by_query_run_on_the_query_process_and_write_through_ingest()
    {
        var tasks = Enumerable.Range(1, 300).Select(i => ($"tasks/{i}", $$"""{"Done": {{(i % 3 == 0 ? "true" : "false")}}, "Points": {{i}}}""")).ToList();
        Assert.True((await fx.Ingest.Http.BulkPutAsync(tasks)).IsSuccessStatusCode);
        await SplitDeployment.RelayCaughtUpAsync(fx.Ingest);

        async Task<System.Text.Json.JsonElement> RunAsync(string rql)
        {
            var r = await fx.Query.Http.PostAsJsonAsync("operations/queries", new { query = rql, staleTimeoutMs = 60_000 });
            Assert.True(r.StatusCode == System.Net.HttpStatusCode.Accepted, await r.Content.ReadAsStringAsync());
            var id = (await r.JsonAsync()).GetProperty("operationId").GetString();
            var deadline = DateTime.UtcNow.AddMinutes(2);
            while (true)
            {
                var status = await fx.Query.Http.GetFromJsonAsync<System.Text.Json.JsonElement>($"operations/{id}");
                if (status.GetProperty("state").GetString() != "running") return status;
                Assert.True(DateTime.UtcNow < deadline, status.ToString());
                await Task.Delay(100);
            }
        }

        var updated = await RunAsync("from Tasks where Done = false update { this.Points += 1000; }");
        Assert.Equal("completed", updated.GetProperty("state").GetString());
        Assert.Equal(200, updated.GetProperty("progress").GetProperty("written").GetInt64());
        var deleted = await RunAsync("from Tasks where Done = true delete");
        Assert.Equal(100, deleted.GetProperty("progress").GetProperty("written").GetInt64());
        for (var i = 1; i <= 300; i++)
        {
            var r = await fx.Ingest.Http.GetAsync($"docs/tasks/{i}");
            if (i % 3 == 0) { Assert.Equal(System.Net.HttpStatusCode.NotFound, r.StatusCode); continue; }
            Assert.Equal(i + 1000, (await r.JsonAsync()).GetProperty("Points").GetInt32());
        }
    }

    [Fact]
    public async Task An_index_is_tried_on_the_documents_of_the_partitions_an_indexer_holds()
    {
        var r = await fx.Indexer.Http.PostAsJsonAsync("indexes/test", new { definition = new { maps = new[] { "map('Posts', p => ({ Score: p.Score }))" } }, sampleSize = 20 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var result = await r.JsonAsync();
        Assert.Equal(20, result.GetProperty("documents").GetInt32());
        var posts = fx.Posts.ToDictionary(p => p.Id);
        Assert.All(result.GetProperty("entries").EnumerateArray(), e =>
            Assert.Equal(posts[e.GetProperty("id").GetString()!].Score, e.GetProperty("entries")[0].GetProperty("Score").GetDouble()));
    }

    [Fact]
    public async Task An_index_history_travels_through_magpie_indexes()
    {
        await fx.Indexer.Http.PutIndexAsync("Posts/KafkaHistory", Indexing.IndexHistoryTests.V1);
        await fx.Indexer.Http.PutIndexAsync("Posts/KafkaHistory", Indexing.IndexHistoryTests.V2);
        Assert.Equal(2, (await Indexing.IndexHistoryTests.HistoryAsync(fx.Indexer.Http, "Posts/KafkaHistory")).Count);
        // The other indexer read the same records from the topic.
        Assert.Equal(2, (await Indexing.IndexHistoryTests.HistoryAsync(fx.OtherIndexer.Http, "Posts/KafkaHistory")).Count);
    }

    [Fact]
    public async Task A_javascript_projection_runs_on_the_indexers_and_loads_are_refused_there()
    {
        var r = await fx.Query.Http.PostAsJsonAsync("queries", new { query = "declare function twice(x) { return 2 * x; } from Posts as p where id() = 'posts/1' select { T: p.Title, S: twice(p.Score) } include timings()", waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var answer = await r.JsonAsync();
        var post = fx.Posts.Single(p => p.Id == "posts/1");
        var result = answer.GetProperty("results").EnumerateArray().Single();
        Assert.Equal(post.Title, result.GetProperty("T").GetString());
        Assert.Equal(2 * post.Score, result.GetProperty("S").GetDouble());
        Assert.True(answer.GetProperty("timings").GetProperty("search").GetDouble() >= 0);

        var refused = await fx.Query.Http.PostAsJsonAsync("queries", new { query = "from Posts where id() = 'posts/2' include ParentId", waitForNonStaleResults = true, timeoutMs = 60_000 });
        await HttpJson.AssertProblem(refused, System.Net.HttpStatusCode.BadRequest, "load and include read related documents from the document store");
    }
}
