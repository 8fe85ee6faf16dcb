using System.Text;
using Magpie.Contracts.Changes;
using Magpie.Ingest.Changes;
using Magpie.Ingest.Documents;
using Microsoft.Extensions.Logging.Abstractions;

namespace Magpie.Tests.Documents;

/// <summary>
/// Change-log compaction on a real FASTER store: superseded versions and deletes are reclaimed, what is kept comes back
/// byte for byte, a reader that was reading all along sees nothing twice, and a reader that starts afterwards sees every
/// live document once.
/// </summary>
[Trait("Category", "Fast")]
public sealed class ChangeLogCompactionTests : IAsyncLifetime
{
    private readonly string _dir = Directory.CreateTempSubdirectory("magpie-compaction-").FullName;
    private DocumentStore _store = null!;
    private readonly ChangeLogReaders _readers = new();

    public async Task InitializeAsync() => _store = await Open();

    private Task<DocumentStore> Open() => DocumentStore.OpenAsync(new DocumentStoreOptions { Directory = _dir, LogMemoryBytes = 1L << 26 });

    public async Task DisposeAsync()
    {
        await _store.DisposeAsync();
        Directory.Delete(_dir, recursive: true);
    }

    private static byte[] Doc(int n, int version) => Encoding.UTF8.GetBytes($$"""{"N":{{n}},"V":{{version}},"Price":1.50,"Text":"caf\u00e9 {{new string('x', 200)}}"}""");

    private ChangeLogCompactor Compactor(RevisionRetention retention) =>
        new(_store, _readers, new CompactionOptions(retention, TimeSpan.FromHours(1), MinBytes: 1), NullLogger<ChangeLogCompactor>.Instance);

    [Fact]
    public async Task Keeps_the_latest_versions_byte_for_byte_and_readers_see_each_change_once()
    {
        for (var version = 1; version <= 3; version++)
            await _store.WriteAsync(Enumerable.Range(1, 200).Select(n => WriteCommand.Put($"items/{n}", Doc(n, version))).ToList(), atomic: false);
        await _store.WriteAsync(Enumerable.Range(1, 20).Select(n => WriteCommand.Delete($"items/{n}")).ToList(), atomic: false);
        var etags = new Dictionary<string, long>();
        for (var n = 21; n <= 200; n++) etags[$"items/{n}"] = (await _store.GetAsync($"items/{n}"))!.Etag;

        // A registered reader, reading all along (as an index or an ETL task does).
        var feed = new EmbeddedChangeFeed(new ChangeLogTail(_store), _readers);
        await using var before = new Reader(feed, "index A");
        await before.CaughtUpAsync(620);
        var sizeBefore = _store.LogTailAddress - _store.LogBeginAddress;

        Assert.True(await Compactor(new RevisionRetention()).RunOnceAsync(CancellationToken.None));

        Assert.True(_store.LogBeginAddress > 64, "the log was not truncated");
        Assert.True(_store.LogTailAddress - _store.LogBeginAddress < sizeBefore / 2, $"log {_store.LogTailAddress - _store.LogBeginAddress} bytes after, {sizeBefore} before");
        Assert.Equal(620, before.Changes.Count);   // the copies were not delivered again
        Assert.Empty(await _store.RevisionsAsync("items/5", 10));
        for (var n = 21; n <= 200; n += 17)
        {
            var doc = await _store.GetAsync($"items/{n}");
            Assert.Equal(Doc(n, 3), doc!.Json);
            Assert.Equal(etags[$"items/{n}"], doc.Etag);
            Assert.Single(await _store.RevisionsAsync($"items/{n}", 10));
        }
        var browsed = await _store.BrowseAsync(null, 0, 1000, 0);
        Assert.Equal(etags.Keys.Order(), browsed.Results.Select(d => d.Id).Order());

        // A reader that starts now (a new index) sees every live document once, as it is, and nothing deleted.
        await using var after = new Reader(feed, "index B");
        await after.CaughtUpAsync(180);
        Assert.Equal(etags.Keys.Order(), after.Changes.Select(c => c.Id).Order());
        Assert.All(after.Changes, c => Assert.Equal(etags[c.Id], c.Etag));

        // Writes go on; both readers see them; a restart recovers the same documents.
        await _store.WriteAsync([WriteCommand.Put("items/50", Doc(50, 4)), WriteCommand.Delete("items/60")], atomic: true);
        await before.CaughtUpAsync(622);
        await after.CaughtUpAsync(182);
        await before.DisposeAsync();
        await after.DisposeAsync();
        await _store.DisposeAsync();
        _store = await Open();
        Assert.Equal(Doc(50, 4), (await _store.GetAsync("items/50"))!.Json);
        Assert.Equal(Doc(70, 3), (await _store.GetAsync("items/70"))!.Json);
        Assert.Null(await _store.GetAsync("items/60"));
        Assert.Null(await _store.GetAsync("items/10"));
        Assert.Equal(179, _store.Stats().Documents);
    }

    [Fact]
    public async Task Keeps_as_many_revisions_as_asked_newest_first()
    {
        for (var version = 1; version <= 5; version++)
        {
            await _store.WriteAsync([WriteCommand.Put("orders/1", Doc(1, version))], atomic: true);
            await _store.WriteAsync(Enumerable.Range(2, 50).Select(n => WriteCommand.Put($"orders/{n}", Doc(n, version))).ToList(), atomic: false);
        }
        var all = await _store.RevisionsAsync("orders/1", 10);
        Assert.Equal([5, 4, 3, 2, 1], all.Select(r => Version(r.Json)));
        var feed = new EmbeddedChangeFeed(new ChangeLogTail(_store), _readers);
        await using var reader = new Reader(feed, "subscription");
        await reader.CaughtUpAsync(255);

        Assert.True(await Compactor(new RevisionRetention(Revisions: 3)).RunOnceAsync(CancellationToken.None));

        var kept = await _store.RevisionsAsync("orders/1", 10);
        Assert.Equal([5, 4, 3], kept.Select(r => Version(r.Json)));
        Assert.Equal(all.Take(3).Select(r => r.Etag), kept.Select(r => r.Etag));
        Assert.Equal(Doc(1, 3), kept[2].Json);
        Assert.Equal(255, reader.Changes.Count);   // kept revisions are history, not changes
        await _store.WriteAsync([WriteCommand.Put("orders/1", Doc(1, 6))], atomic: true);
        Assert.Equal([6, 5, 4, 3], (await _store.RevisionsAsync("orders/1", 10)).Select(r => Version(r.Json)));
        await reader.CaughtUpAsync(256);
    }

    [Fact]
    public async Task Never_truncates_past_a_reader_that_has_not_read_it()
    {
        // Written once: compaction must copy these forward, and then wait for readers to pass the copies.
        await _store.WriteAsync(Enumerable.Range(1, 50).Select(n => WriteCommand.Put($"static/{n}", Doc(n, 1))).ToList(), atomic: false);
        for (var version = 1; version <= 3; version++)
            await _store.WriteAsync(Enumerable.Range(1, 100).Select(n => WriteCommand.Put($"items/{n}", Doc(n, version))).ToList(), atomic: false);
        var (stuckAt, begin) = (0L, _store.LogBeginAddress);
        using var stuck = _readers.Track("errored index", () => stuckAt);
        Assert.False(await Compactor(new RevisionRetention()).RunOnceAsync(CancellationToken.None));
        Assert.Equal(begin, _store.LogBeginAddress);

        // Half way: only what lies behind it can go.
        var feed = new EmbeddedChangeFeed(new ChangeLogTail(_store), new ChangeLogReaders());
        await foreach (var batch in feed.ReadAsync(ChangeFeedPosition.Beginning, 150, CancellationToken.None))
        {
            stuckAt = EmbeddedChangeFeed.AddressOf(batch.After);
            break;
        }
        var compaction = Compactor(new RevisionRetention()).RunOnceAsync(CancellationToken.None);
        await Task.Delay(1000);
        Assert.False(compaction.IsCompleted, "truncated while a reader had not passed the copies");
        stuckAt = _store.LogTailAddress;
        Assert.True(await compaction.WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.True(_store.LogBeginAddress > begin);
        Assert.Equal(Doc(7, 3), (await _store.GetAsync("items/7"))!.Json);
        Assert.Equal(Doc(7, 1), (await _store.GetAsync("static/7"))!.Json);
    }

    private static int Version(byte[] document) => System.Text.Json.JsonDocument.Parse(document).RootElement.GetProperty("V").GetInt32();

    /// <summary>A reader of the feed that records every change and registers its position as durable once read.</summary>
    private sealed class Reader : IAsyncDisposable
    {
        private readonly CancellationTokenSource _stop = new();
        private readonly Task _loop;
        private readonly IDisposable _tracked;
        private ChangeFeedPosition _position = ChangeFeedPosition.Beginning;
        private readonly List<ChangeEvent> _changes = [];

        public Reader(IChangeFeed feed, string name)
        {
            _tracked = feed.Track(name, () => Volatile.Read(ref _position));
            _loop = Task.Run(async () =>
            {
                try
                {
                    await foreach (var batch in feed.ReadAsync(ChangeFeedPosition.Beginning, 64, _stop.Token))
                    {
                        lock (_changes) _changes.AddRange(batch.Changes);
                        Volatile.Write(ref _position, batch.After);
                    }
                }
                catch (OperationCanceledException) { }
            });
        }

        public IReadOnlyList<ChangeEvent> Changes { get { lock (_changes) return [.. _changes]; } }

        public async Task CaughtUpAsync(int count)
        {
            var deadline = DateTime.UtcNow.AddSeconds(30);
            while (Changes.Count < count && DateTime.UtcNow < deadline) await Task.Delay(20);
            await Task.Delay(200);   // and nothing more arrives
            Assert.Equal(count, Changes.Count);
        }

        public async ValueTask DisposeAsync()
        {
            if (_stop.IsCancellationRequested) return;
            await _stop.CancelAsync();
            await _loop;
            _tracked.Dispose();
        }
    }
}
