using System.Text.Json;
using System.Text;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Indexer;
using Magpie.Indexer.Indexing.Stages;
using Magpie.Indexer.Indexing;
using Magpie.Indexer.Lucene;
using Magpie.Indexer.Maps;
using Magpie.Ingest.Changes;
using Magpie.Ingest.Documents;
using Magpie.Scripting;
using Magpie.Tests.Fixtures;
using Microsoft.Extensions.Logging.Abstractions;

namespace Magpie.Tests.Indexing;

/// <summary>The index worker on the embedded change feed of a real store, into real Lucene: the Stack Exchange posts, then changes.</summary>
[Trait("Category", "Fast")]
public sealed class IndexWorkerTests : IAsyncLifetime
{
    private readonly string _dir = Directory.CreateTempSubdirectory("magpie-indexer-").FullName;
    private readonly List<PostsIndexFixture.Post> _posts = new StackExchangeXmlPosts().Posts;
    private DocumentStore _store = null!;
    private LuceneEngine _host = null!;
    private long _lastEtag;

    private static readonly IndexDefinition ByTags = new()
    {
        Maps = ["map('Posts', p => ({ Tags: p.Tags, Score: p.Score, Title: p.Title }))"],
        Fields = new() { ["Title"] = new() { Indexing = IndexFieldOptions.Search } },
    };

    public async Task InitializeAsync()
    {
        _store = await DocumentStore.OpenAsync(new DocumentStoreOptions { Directory = Path.Combine(_dir, "docs"), LogMemoryBytes = 1L << 26 });
        foreach (var chunk in _posts.Chunk(500))
        {
            var outcomes = await _store.WriteAsync(chunk.Select(p => WriteCommand.Put(p.Id, Encoding.UTF8.GetBytes(JsonSerializer.Serialize(new
            {
                p.Title, p.Tags, p.Score, Created = p.Created.ToString("O"),
            })))).ToList(), atomic: true);
            _lastEtag = outcomes.Max(o => o.Etag!.Value);
        }
        _host = new LuceneEngine(NullLogger.Instance);
    }

    public async Task DisposeAsync()
    {
        _host.Dispose();
        await _store.DisposeAsync();
        Directory.Delete(_dir, recursive: true);
    }

    private IndexWorker Worker(IndexDefinition definition, string name = "Posts/ByTags", ScriptLimits? limits = null, int batchSize = IndexerOptions.DefaultBatchSize) =>
        new(name, definition, new EmbeddedChangeFeed(new ChangeLogTail(_store), new ChangeLogReaders()), _host, Path.Combine(_dir, "indexes", name),
            (status, stop) => new MapStage(definition, (limits ?? ScriptLimits.Default) with { Stop = stop }, status, storeSource: false), NullLogger.Instance, batchSize);

    private static async Task<long> Count(IndexWorker worker, SearchQuery q) => (await worker.Index!.SearchAsync(new SearchRequest(q, [], 1))).TotalHits;

    [Fact]
    public async Task Indexes_everything_then_follows_updates_and_deletes_and_resumes_without_redoing_work()
    {
        await using (var worker = Worker(ByTags))
        {
            worker.Start();
            Assert.True(await worker.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)), JsonSerializer.Serialize(worker.Status.Snapshot()));
            Assert.Equal(_posts.Count(p => p.Tags.Contains("discussion")), await Count(worker, new TermQuery("Tags", "discussion")));
            Assert.Equal(_posts.Count(p => p.Score >= 10), await Count(worker, new DoubleRangeQuery("Score@num", 10, double.PositiveInfinity)));
            Assert.Equal(_posts.Count, worker.Status.Snapshot().Entries);

            var victim = _posts.First(p => p.Tags.Contains("discussion"));
            var moved = _posts.Last(p => p.Tags.Contains("discussion"));
            await _store.WriteAsync([WriteCommand.Delete(victim.Id)], atomic: true);
            var last = (await _store.WriteAsync([WriteCommand.Put(moved.Id, Encoding.UTF8.GetBytes("""{"Tags":["moved"],"Score":0}"""))], atomic: true))[0].Etag!.Value;
            Assert.True(await worker.WaitForEtagAsync(last, TimeSpan.FromSeconds(30)));
            Assert.Equal(_posts.Count(p => p.Tags.Contains("discussion")) - 2, await Count(worker, new TermQuery("Tags", "discussion")));
            Assert.Equal(1, await Count(worker, new TermQuery("Tags", "moved")));
            Assert.Equal(_posts.Count - 1, worker.Status.Snapshot().Entries);
            _lastEtag = last;
        }

        // A new worker on the same directory starts from the committed position: nothing to redo.
        await using var resumed = Worker(ByTags);
        resumed.Start();
        Assert.True(await resumed.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(30)));
        await Task.Delay(300);
        Assert.Equal(0, resumed.Status.Snapshot().Batches);
        Assert.Equal(1, await Count(resumed, new TermQuery("Tags", "moved")));
    }

    [Fact]
    public async Task First_versions_replayed_into_a_commit_that_ran_ahead_of_its_position_replace_their_entries_and_never_duplicate()
    {
        const string name = "Posts/AddedOnce";
        var first = Worker(ByTags, name);
        first.Start();
        Assert.True(await first.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)), JsonSerializer.Serialize(first.Status.Snapshot()));
        await first.DisposeAsync();
        var index = first.Index!;
        Assert.Equal(_posts.Count, (await index.StateAsync()).Entries);

        // A commit runs beside the next batch's writes, so it can hold entries of changes past the position it records; after a
        // crash those changes come again. Here the whole index is committed with the position of an empty one: every post, a
        // first version, is replayed into an index that already holds it.
        var data = new Dictionary<string, string>((await index.StateAsync()).CommitData) { [IndexWorker.PositionKey] = "{}", [IndexWorker.EtagKey] = "0" };
        await index.CommitAsync(data);
        await using var resumed = Worker(ByTags, name);
        resumed.Start();
        Assert.True(await resumed.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)), JsonSerializer.Serialize(resumed.Status.Snapshot()));
        Assert.Equal(_posts.Count, await Count(resumed, SearchQuery.All));
        Assert.Equal(_posts.Count(p => p.Tags.Contains("discussion")), await Count(resumed, new TermQuery("Tags", "discussion")));

        // Written after the resume: added, then replaced by its update, removed by its delete, added again when it comes back.
        async Task<long> Write(WriteCommand command)
        {
            var etag = (await _store.WriteAsync([command], atomic: true))[0].Etag!.Value;
            Assert.True(await resumed.WaitForEtagAsync(etag, TimeSpan.FromSeconds(30)));
            return await Count(resumed, new TermQuery("Tags", "fresh"));
        }
        Assert.Equal(1, await Write(WriteCommand.Put("posts/fresh", """{"Tags":["fresh"],"Score":1}"""u8.ToArray())));
        Assert.Equal(1, await Write(WriteCommand.Put("posts/fresh", """{"Tags":["fresh"],"Score":2}"""u8.ToArray())));
        Assert.Equal(1, await Count(resumed, new DoubleRangeQuery("Score@num", 2, 2)) - _posts.Count(p => p.Score == 2));
        Assert.Equal(0, await Write(WriteCommand.Delete("posts/fresh")));
        Assert.Equal(1, await Write(WriteCommand.Put("posts/fresh", """{"Tags":["fresh"],"Score":3}"""u8.ToArray())));
        Assert.Equal(_posts.Count + 1, await Count(resumed, SearchQuery.All));
    }

    [Fact]
    public async Task A_backlog_worked_off_in_small_batches_with_refreshes_beside_the_writes_ends_complete_and_not_stale()
    {
        // Batches of 20: the backlog refreshes (once a second, beside the next batch's writes) while later batches are written.
        await using var worker = Worker(ByTags, "Posts/SmallBatches", batchSize: 20);
        worker.Start();
        Assert.True(await worker.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(120)), JsonSerializer.Serialize(worker.Status.Snapshot()));
        Assert.False(await worker.IsStaleAsync(null, wait: false, TimeSpan.Zero, CancellationToken.None));
        Assert.Equal(_posts.Count, worker.Status.Snapshot().Entries);
        Assert.Equal(_posts.Count(p => p.Tags.Contains("discussion")), await Count(worker, new TermQuery("Tags", "discussion")));
        Assert.True(worker.Status.Snapshot().Batches > _posts.Count / 20 - 1);
    }

    [Fact]
    public async Task Writes_that_trickle_in_back_to_back_all_become_searchable_without_a_later_write()
    {
        await using var worker = Worker(ByTags, "Posts/Trickle");
        worker.Start();
        Assert.True(await worker.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)));
        // One document at a time, each right after the last: a batch that comes moments after a refresh waits for the refresh
        // interval or the next batch before it is searchable. The last one has no next batch: it must not wait for one.
        long last = 0;
        for (var i = 0; i < 30; i++)
            last = (await _store.WriteAsync([WriteCommand.Put($"posts/trickle-{i}", Encoding.UTF8.GetBytes("""{"Tags":["trickle"],"Score":1}"""))], atomic: true))[0].Etag!.Value;
        Assert.True(await worker.WaitForEtagAsync(last, TimeSpan.FromSeconds(30)), JsonSerializer.Serialize(worker.Status.Snapshot()));
        Assert.Equal(30, await Count(worker, new TermQuery("Tags", "trickle")));
    }

    private static readonly IndexDefinition ByYear = new()
    {
        Maps = ["map('Posts', p => ({ Year: p.Created.substring(0, 4), Count: 1, Score: p.Score }))"],
        Reduce = "groupBy(x => x.Year).aggregate(g => ({ Year: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0), Score: g.values.reduce((s, v) => s + v.Score, 0) }))",
    };

    private IndexWorker ReduceWorker(string name = "Posts/ByYear") =>
        new(name, ByYear, new EmbeddedChangeFeed(new ChangeLogTail(_store), new ChangeLogReaders()), _host, Path.Combine(_dir, "indexes", name),
            (status, stop) => new Magpie.Indexer.MapReduce.LocalMapReduceStage(ByYear, ScriptLimits.Default with { Stop = stop }, status), NullLogger.Instance);

    private static async Task<Dictionary<string, (long Count, long Score)>> Results(IndexWorker worker)
    {
        var page = await worker.Index!.SearchAsync(new SearchRequest(SearchQuery.All, [], 1000));
        return page.Hits.Select(h => JsonDocument.Parse((string)h.Stored[EntryFields.Source][0]).RootElement)
            .ToDictionary(r => r.GetProperty("Year").GetString()!, r => (r.GetProperty("Count").GetInt64(), r.GetProperty("Score").GetInt64()));
    }

    private static Dictionary<string, (long Count, long Score)> Expected(IEnumerable<(string Year, long Score)> posts) =>
        posts.GroupBy(p => p.Year).ToDictionary(g => g.Key, g => ((long)g.Count(), g.Sum(p => p.Score)));

    [Fact]
    public async Task A_map_reduce_index_restarts_from_its_committed_state_without_replaying_the_feed()
    {
        var model = _posts.ToDictionary(p => p.Id, p => (Year: p.Created.ToString("yyyy"), p.Score));
        await using (var worker = ReduceWorker())
        {
            worker.Start();
            Assert.True(await worker.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)), JsonSerializer.Serialize(worker.Status.Snapshot()));
            Assert.Equal(Expected(model.Values), await Results(worker));
            Assert.Equal(model.Values.Select(v => v.Year).Distinct().Count(), worker.Status.Snapshot().Entries);   // results only, not the state beside them

            var gone = _posts[0];
            var moved = _posts[1];
            await _store.WriteAsync([WriteCommand.Delete(gone.Id)], atomic: true);
            var last = (await _store.WriteAsync([WriteCommand.Put(moved.Id, Encoding.UTF8.GetBytes("""{"Created":"1999-01-01","Score":7}"""))], atomic: true))[0].Etag!.Value;
            model.Remove(gone.Id);
            model[moved.Id] = ("1999", 7);
            Assert.True(await worker.WaitForEtagAsync(last, TimeSpan.FromSeconds(30)));
            Assert.Equal(Expected(model.Values), await Results(worker));
            _lastEtag = last;
        }

        // Restarted on the same directory: the reduce state comes back from the commit, nothing is replayed ...
        await using var resumed = ReduceWorker();
        resumed.Start();
        Assert.True(await resumed.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(30)));
        await Task.Delay(300);
        Assert.Equal(0, resumed.Status.Snapshot().Batches);
        Assert.Equal(Expected(model.Values), await Results(resumed));

        // ... and it is the whole state: one more change of a large group re-reduces it correctly, and emptying a group removes it.
        var year = model.Values.GroupBy(v => v.Year).OrderByDescending(g => g.Count()).First().Key;
        var member = model.First(m => m.Value.Year == year).Key;
        var etag = (await _store.WriteAsync([WriteCommand.Put(member, Encoding.UTF8.GetBytes($$"""{"Created":"{{year}}-06-01","Score":1000}"""))], atomic: true))[0].Etag!.Value;
        model[member] = (year, 1000);
        etag = (await _store.WriteAsync([WriteCommand.Delete(_posts[1].Id)], atomic: true))[0].Etag!.Value;
        model.Remove(_posts[1].Id);
        Assert.True(await resumed.WaitForEtagAsync(etag, TimeSpan.FromSeconds(30)));
        Assert.Equal(Expected(model.Values), await Results(resumed));
        Assert.DoesNotContain("1999", (await Results(resumed)).Keys);
    }

    [Fact]
    public async Task An_index_an_earlier_version_wrote_without_exact_integers_is_rebuilt_once_when_it_opens()
    {
        const string name = "Posts/EarlierShape";
        await using (var first = Worker(ByTags, name))
        {
            first.Start();
            Assert.True(await first.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)));
        }
        // The same definition and position, committed under the engine's name before integers were kept exactly.
        var index = _host.Open(Path.Combine(_dir, "indexes", name));
        var data = new Dictionary<string, string>((await index.StateAsync()).CommitData);
        Assert.True(data.ContainsKey(IndexWorker.DefinitionKey), string.Join(", ", data.Keys));
        data[IndexWorker.DefinitionKey] = data[IndexWorker.DefinitionKey].Replace(LuceneEngine.EngineName, "lucene.net-4.8", StringComparison.Ordinal);
        await index.CommitAsync(data);
        index.Close();

        await using (var upgraded = Worker(ByTags, name))
        {
            upgraded.Start();
            Assert.True(await upgraded.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)));
            Assert.True(upgraded.Status.Snapshot().Batches > 0, "the index resumed instead of rebuilding");
            Assert.Equal(_posts.Count(p => p.Tags.Contains("discussion")), await Count(upgraded, new TermQuery("Tags", "discussion")));
        }
        // Once: rebuilt under today's name, the next start resumes.
        await using var resumed = Worker(ByTags, name);
        resumed.Start();
        Assert.True(await resumed.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(30)));
        await Task.Delay(300);
        Assert.Equal(0, resumed.Status.Snapshot().Batches);
    }

    [Fact]
    public async Task A_changed_definition_rebuilds_from_the_beginning_and_a_throwing_map_only_costs_its_document()
    {
        await using (var first = Worker(ByTags, "Posts/Rebuilt"))
        {
            first.Start();
            Assert.True(await first.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)));
        }
        var changed = ByTags with { Maps = ["map('Posts', p => { if (p.Score < 0) throw new Error('negative score'); return { Upper: p.Title ? p.Title.toUpperCase() : null }; })"] };
        await using var second = Worker(changed, "Posts/Rebuilt");
        second.Start();
        Assert.True(await second.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)));
        var status = second.Status.Snapshot();
        Assert.Equal(_posts.Count(p => p.Score < 0), status.ErrorCount);
        Assert.Contains("negative score", status.Errors[0].Message);
        Assert.Equal(_posts.Count(p => p.Score >= 0), status.Entries);
        Assert.Equal(0, await Count(second, new ExistsQuery("Tags")));            // the old definition's entries are gone
        Assert.Equal(_posts.Count(p => p.Score >= 0 && p.Title is null), await Count(second, new TermQuery("Upper", "NULL_VALUE")));
        Assert.All(status.RecentBatches, b => Assert.True(b.Changes > 0 && b.CommitMs >= 0));
    }

    [Fact]
    public async Task A_definition_refused_at_start_is_quarantined_while_other_indexes_run()
    {
        // Saved by an older version whose rules were looser; this one cannot compile it.
        await using var refused = Worker(ByTags with { Maps = ["map('Posts', p => ({ A: }))"] }, "Posts/Refused");
        await using var healthy = Worker(ByTags, "Posts/Healthy");
        refused.Start();
        healthy.Start();
        Assert.True(await healthy.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)));
        var failure = await WaitForFailureAsync(refused);
        Assert.Contains("definition quarantined: maps[0]", failure);
        Assert.Contains("line 1", failure);
        Assert.Equal(0, refused.Status.IndexedEtag);
    }

    [Fact]
    public async Task Stopping_a_worker_ends_the_script_it_is_running()
    {
        var spinning = Worker(ByTags with { Maps = ["map('Posts', p => { for (;;) {} })"] }, "Posts/Spinning",
            ScriptLimits.Default with { Timeout = TimeSpan.FromMinutes(10), MaxStatements = int.MaxValue });
        spinning.Start();
        await Task.Delay(500);
        // Each document would run ten minutes; the stop reaches into the running script. The wait only guards the suite.
        await spinning.DisposeAsync().AsTask().WaitAsync(TimeSpan.FromMinutes(1));
        Assert.Equal(0, spinning.Status.IndexedEtag);
    }

    [Fact]
    public async Task Entries_the_engine_would_refuse_fail_only_their_document_and_indexing_goes_on()
    {
        // The inputs: a map that emits a field named @id, and a 40 KB string in an exact field (Lucene's "immense term").
        var definition = ByTags with { Maps = ["map('Posts', p => p.Evil ? { '@id': 'x', Tags: p.Tags } : { Tags: p.Tags, Code: p.Code })"] };
        await using var worker = Worker(definition, "Posts/Refusing");
        await using var other = Worker(ByTags, "Posts/Other");
        worker.Start();
        other.Start();
        var written = await _store.WriteAsync(
        [
            WriteCommand.Put("posts/evil", Encoding.UTF8.GetBytes("""{"Evil":true,"Tags":["evil"]}""")),
            WriteCommand.Put("posts/immense", Encoding.UTF8.GetBytes($$"""{"Tags":["immense"],"Code":"{{new string('x', 40_000)}}"}""")),
            WriteCommand.Put("posts/after", Encoding.UTF8.GetBytes("""{"Tags":["after"],"Code":"fine"}""")),
        ], atomic: true);
        var last = written.Max(o => o.Etag!.Value);
        Assert.True(await worker.WaitForEtagAsync(last, TimeSpan.FromSeconds(60)), JsonSerializer.Serialize(worker.Status.Snapshot()));
        Assert.True(await other.WaitForEtagAsync(last, TimeSpan.FromSeconds(60)));

        var status = worker.Status.Snapshot();
        Assert.Null(status.Failure);
        Assert.Equal(2, status.ErrorCount);
        Assert.Contains("reserved", Assert.Single(status.Errors, e => e.DocumentId == "posts/evil").Message);
        Assert.Contains("40,000-byte value", Assert.Single(status.Errors, e => e.DocumentId == "posts/immense").Message);
        Assert.Equal(1, await Count(worker, new TermQuery("Tags", "after")));
        Assert.Equal(0, await Count(worker, new TermQuery("Tags", "immense")));
        Assert.Equal(_posts.Count + 1, status.Entries);
        // The other index on the same collection took all three.
        Assert.Equal(0, other.Status.Snapshot().ErrorCount);
        Assert.Equal(_posts.Count + 3, other.Status.Snapshot().Entries);
    }

    [Fact]
    public async Task An_index_failing_most_documents_is_marked_errored_while_other_indexes_run()
    {
        Assert.True(_posts.Count >= IndexStatus.ErrorSampleSize);
        await using var failing = Worker(ByTags with { Maps = ["map('Posts', p => { if (p.Score < 1000) throw new Error('always'); return { Tags: p.Tags }; })"] }, "Posts/Failing");
        await using var healthy = Worker(ByTags, "Posts/Healthy2");
        failing.Start();
        healthy.Start();
        Assert.True(await healthy.WaitForEtagAsync(_lastEtag, TimeSpan.FromSeconds(60)));
        var failure = await WaitForFailureAsync(failing);
        Assert.StartsWith("errored: ", failure);
        Assert.Contains("POST /indexes/Posts/Failing/reset", failure);
        var status = failing.Status.Snapshot();
        Assert.True(status.ErrorCount > IndexStatus.ErrorRatioLimit * IndexStatus.ErrorSampleSize);
        // It stopped: it does not go on to the end of the feed, and it stays stopped.
        await Task.Delay(500);
        Assert.True(failing.Status.IndexedEtag < _lastEtag);
        Assert.Equal(status.ErrorCount, failing.Status.Snapshot().ErrorCount);
        Assert.Equal(_posts.Count, healthy.Status.Snapshot().Entries);
    }

    [Fact]
    public void Full_batches_count_as_a_backlog_only_once_their_changes_are_a_backlog_refresh_old()
    {
        static FeedRead Written(TimeSpan ago) => FeedRead.Of(new([new ChangeEvent("posts/1", "Posts", 1, ChangeOp.Put, DateTimeOffset.UtcNow - ago, null),
            new ChangeEvent("posts/2", "Posts", 2, ChangeOp.Put, DateTimeOffset.UtcNow, null)], ChangeFeedPosition.Beginning));
        // A hiccup fills batches with changes made a moment ago: still refreshed at the caught-up cadence.
        Assert.False(IndexWorker.Late(Written(TimeSpan.FromMilliseconds(300))));
        // Its oldest change already older than a backlog refresh: a backlog, however new the rest.
        Assert.True(IndexWorker.Late(Written(IndexWorker.BacklogRefreshInterval + TimeSpan.FromMilliseconds(100))));
        Assert.False(IndexWorker.Late(FeedRead.Of(new ChangeBatch([], ChangeFeedPosition.Beginning))));
    }

    private static async Task<string> WaitForFailureAsync(IndexWorker worker)
    {
        for (var i = 0; i < 600 && worker.Status.Snapshot().Failure is null; i++) await Task.Delay(100);
        return worker.Status.Snapshot().Failure ?? throw new Xunit.Sdk.XunitException("the worker never reported a failure");
    }
}

/// <summary>The sample's posts, as the Lucene tests read them.</summary>
public sealed class StackExchangeXmlPosts
{
    public List<PostsIndexFixture.Post> Posts { get; } =
        new Producers.StackExchangeXml(RepoPaths.StackExchangeSample).Posts.Select(PostsIndexFixture.Post.From).ToList();
}
