using System.Diagnostics;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using System.Threading.Channels;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Lucene;
using Magpie.Indexer.MapReduce;
using Magpie.Indexer.Maps;
using Magpie.Scripting;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Indexing;

/// <summary>
/// Keeps one map index current: reads the change feed from the position in the index's last commit, runs
/// the maps, writes the batch to Lucene (a document's entries replace its old ones; deletes remove them),
/// refreshes the NRT searcher, and commits now and then with the new position in the commit's user data. After a crash
/// it resumes from the last commit and re-applies what followed, which replaces the same entries again —
/// so the index equals a fresh rebuild. A commit made by another definition (a changed index) is wiped and
/// rebuilt from the beginning of the feed.
/// </summary>
/// <param name="storeSource">Keep each document (with its metadata) in its entries as <see cref="SourceField"/>:
/// Kafka-mode indexers have no document store beside them, so query results come from the index.</param>
public sealed class IndexWorker(string name, IndexDefinition definition, IChangeFeed feed, LuceneHostProcess host, string directory,
    ScriptLimits limits, ILogger log, int batchSize = 4096, bool storeSource = false) : IAsyncDisposable
{
    public const string PositionKey = "magpie.position", EtagKey = "magpie.etag", DefinitionKey = "magpie.definition";
    public const string SourceField = "@source";

    private readonly CancellationTokenSource _stop = new();
    private readonly string _fingerprint = Fingerprint(definition);
    private readonly List<(long Etag, TaskCompletionSource Done)> _waiters = [];
    private Task _loop = Task.CompletedTask;
    private ChangeFeedPosition _position = ChangeFeedPosition.Beginning;
    private long _lastCommit = Stopwatch.GetTimestamp();
    private readonly Lock _commitLock = new();
    private Task _committing = Task.CompletedTask;
    private (long Batch, Dictionary<string, string> Data)? _nextCommit;
    private Exception? _commitFailure;

    /// <summary>The longest a searchable batch stays uncommitted while more batches keep coming.</summary>
    public static readonly TimeSpan CommitInterval = TimeSpan.FromSeconds(1);

    public IndexStatus Status { get; } = new();

    /// <summary>The shard of the change feed this worker indexes (<c>IIndexShards.All</c> when embedded).</summary>
    public int Shard { get; init; } = -1;

    /// <summary>How far the index has consumed its feed (committed and searchable).</summary>
    public ChangeFeedPosition Position => Volatile.Read(ref _position);

    /// <summary>Completes when the index has consumed its feed up to <paramref name="target"/> (per source partition); false on timeout.</summary>
    public async Task<bool> WaitForPositionAsync(IReadOnlyDictionary<string, long> target, TimeSpan timeout, CancellationToken ct = default)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (!Reached(Position, target))
        {
            if (DateTime.UtcNow >= deadline) return false;
            await Task.Delay(5, ct);
        }
        return true;
    }

    public static bool Reached(ChangeFeedPosition position, IReadOnlyDictionary<string, long> target) =>
        target.All(t => t.Value <= 0 || position.Next.TryGetValue(t.Key, out var next) && next >= t.Value);

    /// <summary>Snapshots of this index held by streams right now (each keeps its segment files open).</summary>
    public int HeldSnapshots => Volatile.Read(ref _heldSnapshots);

    /// <summary>A stream took (+1) or let go of (-1) a snapshot of this index.</summary>
    public void SnapshotHeld(int delta) => Interlocked.Add(ref _heldSnapshots, delta);

    private int _heldSnapshots;

    /// <summary>The open Lucene index, for queries (null until the worker opened it).</summary>
    public LuceneIndex? Index { get; private set; }

    public static string Fingerprint(IndexDefinition definition) =>
        Convert.ToHexString(SHA256.HashData(JsonSerializer.SerializeToUtf8Bytes(definition)))[..16];

    public void Start() => _loop = Task.Run(() => RunAsync(_stop.Token));

    /// <summary>Changes the index has not processed yet (null when the feed can't tell cheaply).</summary>
    public long? Backlog() => feed.Backlog(_position, Status.IndexedEtag);

    /// <summary>The newest document etag the index knows of: what it processed plus what is still to come (embedded feed).</summary>
    public long? LastDocumentEtag() => Backlog() is { } b ? Status.IndexedEtag + b : null;

    /// <summary>Completes when the index has processed <paramref name="etag"/> (or a later one); false on timeout.</summary>
    public async Task<bool> WaitForEtagAsync(long etag, TimeSpan timeout, CancellationToken ct = default)
    {
        TaskCompletionSource done;
        lock (_waiters)
        {
            if (Status.IndexedEtag >= etag) return true;
            done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _waiters.Add((etag, done));
        }
        try { await done.Task.WaitAsync(timeout, ct); return true; }
        catch (TimeoutException) { return false; }
    }

    private async Task RunAsync(CancellationToken ct)
    {
        using var maps = MapScript.Compile(definition.Maps, limits);
        using var reduce = definition.Reduce is { } r ? ReduceScript.Compile(r, limits) : null;
        var delay = TimeSpan.FromSeconds(1);
        while (!ct.IsCancellationRequested)
        {
            try
            {
                Index ??= await LuceneIndex.OpenAsync(host, directory, ct);
                var position = await ResumeAsync(Index, ct);
                _position = position;
                ReleaseWaiters(Status.IndexedEtag);
                await IndexFromAsync(Index, maps, reduce, position, ct);
            }
            catch (OperationCanceledException) when (ct.IsCancellationRequested) { break; }
            catch (Exception e)
            {
                Status.Failed(e.Message);
                log.LogWarning("index {Index}: {Error}; retrying in {Delay} s", name, e.Message, delay.TotalSeconds);
                try { await Task.Delay(delay, ct); } catch (OperationCanceledException) { break; }
                delay = TimeSpan.FromSeconds(Math.Min(delay.TotalSeconds * 2, 30));
            }
        }
    }

    /// <summary>
    /// Two stages, so the JS maps (here) and Lucene (in the Java host) work at the same time: batch n+1 is
    /// read and mapped while batch n is written and committed. One mapped batch waits at most.
    /// </summary>
    private async Task IndexFromAsync(LuceneIndex index, MapScript maps, ReduceScript? reduce, ChangeFeedPosition position, CancellationToken ct)
    {
        // Map/reduce: the map results per key live in memory, built from the feed's beginning (ResumeAsync rebuilt the index).
        var reduceState = reduce is null ? null : new ReduceState(reduce);
        using var attempt = CancellationTokenSource.CreateLinkedTokenSource(ct);
        lock (_commitLock) _commitFailure = null;
        var mapped = Channel.CreateBounded<MappedBatch>(new BoundedChannelOptions(1) { SingleReader = true, SingleWriter = true });
        var mapping = Task.Run(async () =>
        {
            try
            {
                var waited = Stopwatch.GetTimestamp();
                await foreach (var batch in feed.ReadAsync(position, batchSize, attempt.Token))
                {
                    await mapped.Writer.WriteAsync(Map(maps, reduceState, batch, Stopwatch.GetElapsedTime(waited)), attempt.Token);
                    waited = Stopwatch.GetTimestamp();
                }
                mapped.Writer.Complete();
            }
            catch (Exception e) { mapped.Writer.Complete(e); }
        }, attempt.Token);
        try
        {
            await foreach (var batch in mapped.Reader.ReadAllAsync(attempt.Token)) await WriteAsync(index, batch, moreWaiting: mapped.Reader.Count > 0, attempt.Token);
        }
        finally
        {
            attempt.Cancel();
            await mapping.ContinueWith(_ => { }, TaskScheduler.Default);
            await _committing; // lets the commit asked for finish; never failing: its failure is kept for the next write
        }
    }

    /// <summary>Where the last commit says this index got to; a commit of another definition is wiped first.</summary>
    private async Task<ChangeFeedPosition> ResumeAsync(LuceneIndex index, CancellationToken ct)
    {
        var state = await index.StateAsync(ct);
        var data = state.CommitData;
        if (data.GetValueOrDefault(DefinitionKey) != _fingerprint || definition.Reduce is not null)
        {
            if (definition.Reduce is not null) log.LogInformation("index {Index}: map/reduce, building its reduce state from the beginning of the feed", name);
            else if (data.Count > 0) log.LogInformation("index {Index}: definition changed, rebuilding from the beginning", name);
            await index.DeleteAllAsync(ct);
            await index.CommitAsync(Commit(ChangeFeedPosition.Beginning, 0), ct);
            Status.Resumed(0, 0);
            return ChangeFeedPosition.Beginning;
        }
        Status.Resumed(long.Parse(data[EtagKey]), state.Entries);
        return new ChangeFeedPosition(JsonSerializer.Deserialize<Dictionary<string, long>>(data[PositionKey])!);
    }

    /// <summary>A batch after the maps: what to delete, what to write, and what it took so far.</summary>
    private sealed record MappedBatch(ChangeBatch Source, List<string> Deletes, List<IndexedDocument> Documents, int Entries, double ReadMs, double MapMs);

    private MappedBatch Map(MapScript maps, ReduceState? reduce, ChangeBatch batch, TimeSpan read)
    {
        var started = Stopwatch.GetTimestamp();
        // The last change of each document in the batch decides; earlier ones are superseded.
        var latest = new Dictionary<string, ChangeEvent>(StringComparer.Ordinal);
        foreach (var change in batch.Changes)
            if (maps.Collections.Contains(change.Collection)) latest[change.Id] = change;
        if (reduce is not null) return MapReduce(maps, reduce, batch, latest.Values, read, started);
        var deletes = new List<string>();
        var documents = new List<IndexedDocument>();
        var entries = 0;
        foreach (var change in latest.Values)
        {
            if (change.Op == ChangeOp.Delete) { deletes.Add(change.Id); continue; }
            try
            {
                var mapped = maps.Run(change).Select(e => EntryFields.From(e, definition)).ToList();
                if (storeSource) mapped = WithSource(mapped, change);
                entries += mapped.Count;
                documents.Add(new IndexedDocument(change.Id, mapped));
            }
            catch (ScriptRunException e)
            {
                // Recorded and skipped; its old entries go, so the index never shows a version the map can't produce.
                Status.Error(change.Id, e.Message);
                documents.Add(new IndexedDocument(change.Id, []));
            }
        }
        return new MappedBatch(batch, deletes, documents, entries, Ms(read), Ms(Stopwatch.GetElapsedTime(started)));
    }

    /// <summary>
    /// Writes a mapped batch and refreshes the near-real-time reader: searchable now. Commits (durable, with the
    /// position in the user data) when nothing more is waiting, else at least every <see cref="CommitInterval"/>:
    /// batches still share commits (the seed's "index merging"), but no batch waits for an fsync before its
    /// writes are visible. The commit runs while the next batch is written (one commit at a time): entries of
    /// that batch may land in it too, which is harmless, since after a crash the index resumes from the
    /// position in the commit and re-applies what followed, replacing the same entries again.
    /// </summary>
    private async Task WriteAsync(LuceneIndex index, MappedBatch batch, bool moreWaiting, CancellationToken ct)
    {
        var started = Stopwatch.GetTimestamp();
        if (batch.Deletes.Count > 0 || batch.Documents.Count > 0) await index.WriteAsync(batch.Deletes, batch.Documents, ct);
        await index.RefreshAsync(ct);
        var searchable = Stopwatch.GetElapsedTime(started);
        var lastEtag = Math.Max(Status.IndexedEtag, batch.Source.Changes.Max(c => c.Etag));
        _position = batch.Source.After;
        var state = await index.StateAsync(ct);
        var number = Status.Batch(new IndexBatchStats(DateTimeOffset.UtcNow, batch.Source.Changes.Count, batch.Documents.Count + batch.Deletes.Count, batch.Entries,
            batch.ReadMs, batch.MapMs, Ms(searchable), 0), lastEtag, state.Entries);
        ReleaseWaiters(lastEtag);
        if (moreWaiting && Stopwatch.GetElapsedTime(_lastCommit) < CommitInterval) return;
        _lastCommit = Stopwatch.GetTimestamp();
        lock (_commitLock)
        {
            if (_commitFailure is { } failed) { _commitFailure = null; throw new LuceneException($"commit failed: {failed.Message}"); }
            _nextCommit = (number, Commit(batch.Source.After, lastEtag));
            // Not cancelled with the worker: a stop waits for the commit asked for (short), so a restart does not redo that work.
            if (_committing.IsCompleted) _committing = Task.Run(() => CommitLoopAsync(index), CancellationToken.None);
        }
    }

    /// <summary>Commits the newest requested position until none is waiting: one commit in flight, the latest request next.</summary>
    private async Task CommitLoopAsync(LuceneIndex index)
    {
        while (true)
        {
            (long Batch, Dictionary<string, string> Data) next;
            lock (_commitLock)
            {
                if (_nextCommit is not { } n) return;
                (next, _nextCommit) = (n, null);
            }
            var started = Stopwatch.GetTimestamp();
            try { await index.CommitAsync(next.Data); }
            catch (Exception e)
            {
                lock (_commitLock) { _commitFailure = e; _nextCommit = null; }
                return;
            }
            Status.Committed(next.Batch, Ms(Stopwatch.GetElapsedTime(started)));
        }
    }

    /// <summary>
    /// A map/reduce batch: each document's map results replace what it contributed before, then only the keys
    /// the batch touched are re-reduced (their reduce trees); results replace their key's entry, a key left
    /// without entries is deleted. A document whose map or key throws is recorded and contributes nothing.
    /// </summary>
    private MappedBatch MapReduce(MapScript maps, ReduceState reduce, ChangeBatch batch, IEnumerable<ChangeEvent> changes, TimeSpan read, long started)
    {
        foreach (var change in changes)
        {
            if (change.Op == ChangeOp.Delete) { reduce.Delete(change.Id); continue; }
            try { reduce.Put(change.Id, maps.RunJson(change)); }
            catch (ScriptRunException e)
            {
                Status.Error(change.Id, e.Message);
                reduce.Delete(change.Id);
            }
        }
        var (results, gone, failed) = reduce.Flush();
        foreach (var (key, message) in failed) Status.Error($"reduce key {key}", message);
        var documents = results.Select(r => new IndexedDocument(r.Key,
            [new IndexEntry([.. EntryFields.From(ReduceState.EntryOf(r.Result), definition).Fields, new StoredField(SourceField, r.Result)])])).ToList();
        return new MappedBatch(batch, gone, documents, documents.Count, Ms(read), Ms(Stopwatch.GetElapsedTime(started)));
    }

    private static List<IndexEntry> WithSource(List<IndexEntry> entries, ChangeEvent change)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
            Contracts.Documents.DocumentMetadata.WriteWithMetadata(w, change.Document!.Value, change.Id, change.Collection, change.Etag, change.LastModified);
        var source = new StoredField(SourceField, Encoding.UTF8.GetString(buffer.WrittenSpan));
        return entries.Select(e => new IndexEntry([.. e.Fields, source])).ToList();
    }

    private Dictionary<string, string> Commit(ChangeFeedPosition position, long etag) => new()
    {
        [PositionKey] = JsonSerializer.Serialize(position.Next),
        [EtagKey] = etag.ToString(),
        [DefinitionKey] = _fingerprint,
    };

    private void ReleaseWaiters(long etag)
    {
        lock (_waiters)
        {
            foreach (var w in _waiters.Where(w => w.Etag <= etag)) w.Done.TrySetResult();
            _waiters.RemoveAll(w => w.Etag <= etag);
        }
    }

    private static double Ms(TimeSpan t) => Math.Round(t.TotalMilliseconds, 2);

    public async ValueTask DisposeAsync()
    {
        _stop.Cancel();
        try { await _loop; } catch (OperationCanceledException) { }
        _stop.Dispose();
    }
}
