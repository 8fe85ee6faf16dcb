using Magpie.Contracts;
using System.Diagnostics;
using System.Text.Json;
using System.Threading.Channels;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Indexer.Indexing.Stages;
using Magpie.Indexer.Engine;
using Magpie.Scripting;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Indexing;

/// <summary>
/// Keeps one index current: reads the change feed from the position in the index's last commit, passes each batch
/// through its stage (<see cref="IIndexStage"/>: the maps, or map/reduce), writes the result to Lucene, refreshes the
/// NRT searcher, and commits now and then with the new position in the commit's user data. After a crash it resumes
/// from the last commit (the stage reloads the state it keeps beside the entries) and re-applies what followed, which
/// replaces the same entries again — so the index equals a fresh rebuild. A commit made by another definition (a
/// changed index) is wiped and rebuilt from the beginning of the feed.
/// </summary>
public sealed partial class IndexWorker(string name, IndexDefinition definition, IChangeFeed feed, IIndexEngine engine, string directory,
    Func<IIndexErrors, CancellationToken, IIndexStage> stages, ILogger log, int batchSize = IndexerOptions.DefaultBatchSize, RetryDelays? retry = null) : IAsyncDisposable, ILocalShard
{
    public const string PositionKey = "magpie.position", EtagKey = "magpie.etag", DefinitionKey = "magpie.definition", SourceKey = "magpie.source";

    private readonly CancellationTokenSource _stop = new();
    /// <summary>What the commit's <see cref="DefinitionKey"/> says: the definition and the engine that wrote the index (another of either is rebuilt).</summary>
    private readonly string _fingerprint = $"{definition.Fingerprint()}@{engine.Name}";
    private readonly List<(long Etag, TaskCompletionSource Done)> _waiters = [];
    private Task _loop = Task.CompletedTask;
    private ChangeFeedPosition _position = ChangeFeedPosition.Beginning;
    private ChangeFeedPosition? _sourcePosition;
    /// <summary>Raised at every refresh: what waiters for a position check again.</summary>
    private readonly Signal _refreshed = new();
    private long _lastCommit = Stopwatch.GetTimestamp();
    private readonly Lock _commitLock = new();
    private Task _committing = Task.CompletedTask;
    private (long Batch, Dictionary<string, string> Data, ChangeFeedPosition Position)? _nextCommit;
    private Exception? _commitFailure;
    /// <summary>Held by a batch's writes and, for stages that need whole batches in a commit (<see cref="IIndexStage.WholeBatchCommits"/>), by the commit.</summary>
    private readonly SemaphoreSlim _writeGate = new(1, 1);
    private bool _wholeBatchCommits;

    /// <summary>
    /// How long a searchable batch may stay uncommitted: commits come at most this often (<see cref="CommitLoopAsync"/>). What is
    /// not committed is not lost: the change feed keeps everything after the commit's position, and a restart re-applies it (at
    /// most this much indexing work). Each commit is a full flush (a segment) and an fsync of every file written since the last;
    /// once a second that was a seventh of the process's CPU in a backlog and twice the segments to merge (profile of the
    /// 1M-post index benchmark), for a replay window nobody sees. Elasticsearch commits even less often, for the same reason.
    /// </summary>
    public static readonly TimeSpan CommitInterval = TimeSpan.FromSeconds(10);

    /// <summary>While a backlog is worked off (full batches), how often what was written becomes searchable.</summary>
    public static readonly TimeSpan BacklogRefreshInterval = TimeSpan.FromSeconds(1);

    /// <summary>Caught up, what is written becomes searchable at most this often (<see cref="RefreshDueAsync"/>).</summary>
    public static readonly TimeSpan MinRefreshInterval = TimeSpan.FromMilliseconds(50);

    private long _lastRefresh = Stopwatch.GetTimestamp();

    /// <summary>The refresh running beside the writes (a backlog), if any (<see cref="WriteAsync"/>).</summary>
    private Task _refreshing = Task.CompletedTask;

    /// <summary>Written but maybe not yet searchable (a backlog refreshes once per <see cref="BacklogRefreshInterval"/>): the newest etag and source watermarks.</summary>
    private long _writtenEtag;
    private ChangeFeedPosition? _writtenSource;

    public IndexStatus Status { get; } = new(name);

    /// <summary>The definition this worker indexes with.</summary>
    public IndexDefinition Definition => definition;

    /// <summary>The shard of the change feed this worker indexes (<c>IIndexShards.All</c> when embedded).</summary>
    public int Shard { get; init; } = -1;

    /// <summary>How far the index has consumed its feed (committed and searchable).</summary>
    public ChangeFeedPosition Position => Volatile.Read(ref _position);

    /// <summary>
    /// How far the index has seen the source partitions: its feed position, or for a worker fed by every partition (the
    /// reduce side of Kafka mode) the map stages' watermarks that reached it. What staleness is measured against.
    /// </summary>
    public ChangeFeedPosition SourcePosition => Volatile.Read(ref _sourcePosition) ?? Position;

    /// <summary>
    /// The part of a target (source partition → offset) this worker answers for: its own shard, or all of it when fed by every
    /// partition. A shard whose maps load documents of any partition answers for every partition's changes too (what it loaded
    /// may be among them), followed under <see cref="Maps.LoadFollowingFeed.Prefix"/>.
    /// </summary>
    /// <remarks>The reduce side of such an index (fed by every partition) answers for how far each map stage followed each
    /// partition (<see cref="MapReduce.MappedTopics.LoadsWatermark"/>).</remarks>
    public Dictionary<string, long> Covers(IReadOnlyDictionary<string, long> target)
    {
        if (Shard == Shards.IIndexShards.All) return new(target);
        if (_sourcePosition is not null)
        {
            var all = new Dictionary<string, long>(target);
            if (FollowsLoads)
                foreach (var mapped in target.Keys)
                    foreach (var (changed, offset) in target) all[MapReduce.MappedTopics.LoadsWatermark(mapped, changed)] = offset;
            return all;
        }
        var mine = target.Where(t => t.Key == Shard.ToString()).ToDictionary();
        if (FollowsLoads)
            foreach (var (partition, offset) in target) mine[Maps.LoadFollowingFeed.Prefix + partition] = offset;
        return mine;
    }

    /// <summary>Kafka mode, an index whose maps <c>load()</c>: its shards follow every partition's changes (<see cref="Maps.LoadFollowingFeed"/>).</summary>
    public bool FollowsLoads { get; init; }

    /// <summary>Completes when the index has seen its source up to <paramref name="target"/> (per source partition); false on timeout.</summary>
    public async Task<bool> WaitForPositionAsync(IReadOnlyDictionary<string, long> target, TimeSpan timeout, CancellationToken ct = default)
    {
        return await Waits.UntilAsync(() => Reached(SourcePosition, target), timeout, ct, _refreshed);
    }

    public static bool Reached(ChangeFeedPosition position, IReadOnlyDictionary<string, long> target) =>
        target.All(t => t.Value <= 0 || position.Next.TryGetValue(t.Key, out var next) && next >= t.Value);

    /// <summary>Snapshots of this index held by streams right now (each keeps its segment files open).</summary>
    public int HeldSnapshots => Volatile.Read(ref _heldSnapshots);

    /// <summary>A stream took (+1) or let go of (-1) a snapshot of this index.</summary>
    public void SnapshotHeld(int delta) => Interlocked.Add(ref _heldSnapshots, delta);

    private int _heldSnapshots;

    /// <summary>The open index, for queries (null until the worker opened it).</summary>
    public IIndexPersistence? Index { get; private set; }

    IShardSearcher? ILocalShard.Searcher => Index;

    long ILocalShard.IndexedEtag => Status.IndexedEtag;

    /// <summary>
    /// Kafka mode: stale if the shard has not seen its partition (the reduce side of a map/reduce index: every partition,
    /// through the map stages' watermarks) up to <paramref name="target"/>. Embedded: by the change feed's backlog,
    /// waiting for the last document etag.
    /// </summary>
    public async Task<bool> IsStaleAsync(IReadOnlyDictionary<string, long>? target, bool wait, TimeSpan timeout, CancellationToken ct)
    {
        if (target is not null)
        {
            var mine = Covers(target);
            if (Reached(SourcePosition, mine)) return false;
            return !wait || !await WaitForPositionAsync(mine, timeout, ct);
        }
        if (Backlog() is 0) return false;
        if (!wait || LastDocumentEtag() is not { } last) return true;
        return !await WaitForEtagAsync(last, timeout, ct);
    }

    public void Start()
    {
        // Until the index is opened this says "from the beginning", which holds compaction back: safe.
        _tracked = feed.Track($"index {name}" + (Shard >= 0 ? $" (shard {Shard})" : ""), () => Volatile.Read(ref _durable));
        _loop = Task.Run(() => RunAsync(_stop.Token));
    }

    /// <summary>The position of the last durable commit: where the index resumes after a crash (what the feed must keep).</summary>
    private ChangeFeedPosition _durable = ChangeFeedPosition.Beginning;
    private IDisposable? _tracked;

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

    private async Task RunAsync(CancellationToken ct) =>
        await SupervisedLoop.RunAsync(AttemptAsync, (retry ?? RetryDelays.Default).Start(), (e, delay) =>
        {
            Status.Failed(e.Message);
            log.LogWarning("index {Index}: {Error}; retrying in {Delay} s", name, e.Message, delay.TotalSeconds);
            // The next attempt resumes from the last commit, state and position together: what this one wrote since is rolled
            // back. Reusing the open index would load the stage's state from the last refreshed reader, which may be behind the
            // commit's position (a backlog refreshes once a second) — the map stage would then miss what it already published.
            CloseIndex();
            return ValueTask.CompletedTask;
        }, ct, wake: _retried);

    private async Task AttemptAsync(CancellationToken ct)
    {
        IIndexStage? stage = null;
        using var attempt = CancellationTokenSource.CreateLinkedTokenSource(ct);
        _attempt = attempt;
        var token = attempt.Token;
        try
        {
            stage = stages(Status, token);
            await stage.PrepareAsync(token);
            Index ??= engine.Open(directory);
            var position = await ResumeAsync(Index, stage, token);
            if (await stage.CatchUpAsync(Index, position, token) is { } caughtUp)
            {
                log.LogInformation("index {Index}: shard {Shard} taken over at {Position} (was {Was})", name, Shard,
                    JsonSerializer.Serialize(caughtUp.Next), JsonSerializer.Serialize(position.Next));
                await Index.CommitAsync(Commit(caughtUp, Status.IndexedEtag), token);
                position = caughtUp;
            }
            Volatile.Write(ref _durable, position);
            _position = position;
            ReleaseWaiters(Status.IndexedEtag);
            _refreshed.Raise();
            var retried = Interlocked.Exchange(ref _retry, null) is { } ids ? await RetriedAsync(ids, position, token) : null;
            await IndexFromAsync(Index, stage, position, retried, token);
        }
        catch (OperationCanceledException) when (!ct.IsCancellationRequested && Volatile.Read(ref _retry) is not null)
        {
            // A retry ended the attempt: resume from the last commit at once, what this attempt wrote since rolled back.
            CloseIndex();
        }
        catch (Exception e) when (e is ScriptSyntaxException or IndexErroredException)
        {
            // A saved definition this version refuses (stricter script rules), or one that fails most documents: retrying
            // cannot help. The index stays in error, the process and every other index run on, and a reset, a new
            // definition or a retry of the failed documents starts it again.
            var reason = e is ScriptSyntaxException ? $"definition quarantined: {e.Message}" : e.Message;
            Status.Failed(reason);
            log.LogError("index {Index}: {Reason}", name, reason);
            try { await Task.Delay(Timeout.Infinite, token); }
            catch (OperationCanceledException) when (!ct.IsCancellationRequested) { CloseIndex(); }
        }
        finally
        {
            (stage as IDisposable)?.Dispose();
            _attempt = null;
        }
    }

    private void CloseIndex()
    {
        var index = Index;
        Index = null;
        index?.Close();
    }

    /// <summary>
    /// Two loops, so the JS maps (here) and the engine's writes work at the same time: batch n+1 is read and
    /// mapped while batch n is applied (reduced), written and committed. At most <see cref="IIndexStage.MapAhead"/> mapped batches wait.
    /// A failure anywhere ends the attempt; the worker resumes from the last commit.
    /// </summary>
    private async Task IndexFromAsync(IIndexPersistence index, IIndexStage stage, ChangeFeedPosition position, ChangeBatch? first, CancellationToken ct)
    {
        using var attempt = CancellationTokenSource.CreateLinkedTokenSource(ct);
        lock (_commitLock) _commitFailure = null;
        (_writtenEtag, _writtenSource) = (0, null);   // from the resumed commit on (a rebuild starts at 0)
        _refreshing = Task.CompletedTask;
        _wholeBatchCommits = stage.WholeBatchCommits;
        // Two readers wait on it: this loop, and a write waiting for the next batch before it refreshes (RefreshDueAsync).
        var mapped = Channel.CreateBounded<MappedBatch>(new BoundedChannelOptions(stage.MapAhead) { SingleReader = false, SingleWriter = true });
        var mapping = Task.Run(async () =>
        {
            try
            {
                var waited = Stopwatch.GetTimestamp();
                // Retried documents first, at the resumed position (nothing of the feed is skipped or read twice).
                if (first is not null) await mapped.Writer.WriteAsync(stage.Map(first), attempt.Token);
                await foreach (var batch in feed.ReadAsync(position, batchSize, attempt.Token))
                {
                    var read = Ms(Stopwatch.GetElapsedTime(waited));
                    var started = Stopwatch.GetTimestamp();
                    var result = stage.Map(batch);
                    await mapped.Writer.WriteAsync(result with { ReadMs = read, MapMs = Ms(Stopwatch.GetElapsedTime(started)) }, attempt.Token);
                    waited = Stopwatch.GetTimestamp();
                }
                mapped.Writer.Complete();
            }
            catch (Exception e) { mapped.Writer.Complete(e); }
        }, attempt.Token);
        // The stage applies batch n+1 (the reduce) while the engine writes batch n on another thread; writes stay in order.
        var writing = Task.CompletedTask;
        try
        {
            await foreach (var batch in mapped.Reader.ReadAllAsync(attempt.Token))
            {
                var started = Stopwatch.GetTimestamp();
                var applied = await stage.ApplyAsync(batch, attempt.Token) with { ApplyMs = Ms(Stopwatch.GetElapsedTime(started)) };
                if (Status.Errored is { } errored) throw new IndexErroredException(errored.Replace("{name}", name));
                await writing;
                var more = mapped.Reader.Count > 0;
                // Behind only when the feed filled the batch: the next batch already mapped says little by itself, since the map
                // stage runs a batch ahead of the writes whenever writes arrive in bursts (a bulk request), caught up or not. And
                // only when its changes are older than a backlog refresh already: a hiccup of a few hundred milliseconds (a large
                // merge after a load) also fills batches, and taken for a backlog its writes wait up to a whole second to be
                // searchable (p99 1.1–1.7 s in a build that refreshed in line and so fell behind more often).
                var behind = more && batch.Source.Count >= batchSize && Late(batch.Source);
                writing = Task.Run(() => WriteAsync(index, applied, moreWaiting: more, behind, mapped.Reader, attempt.Token), attempt.Token);
            }
            await writing;
        }
        finally
        {
            attempt.Cancel();
            await writing.ContinueWith(_ => { }, TaskScheduler.Default);
            await _refreshing.ContinueWith(_ => { }, TaskScheduler.Default);
            await mapping.ContinueWith(_ => { }, TaskScheduler.Default);
            await _committing; // lets the commit asked for finish; never failing: its failure is kept for the next write
        }
    }

    /// <summary>
    /// Where the last commit says this index got to, with the stage's state reloaded; a commit of another definition
    /// is wiped first and the index starts from the beginning of its feed.
    /// </summary>
    private async Task<ChangeFeedPosition> ResumeAsync(IIndexPersistence index, IIndexStage stage, CancellationToken ct)
    {
        var state = await index.StateAsync(ct);
        var data = state.CommitData;
        _sourcePosition = stage.FedByAllPartitions ? ChangeFeedPosition.Beginning : null;
        var truncated = data.TryGetValue(PositionKey, out var saved) && !feed.CanResume(new ChangeFeedPosition(JsonSerializer.Deserialize<Dictionary<string, long>>(saved)!));
        if (data.GetValueOrDefault(DefinitionKey) != _fingerprint || truncated)
        {
            if (truncated) log.LogWarning("index {Index}: the change log was compacted past this index's position; rebuilding from the beginning", name);
            else if (data.Count > 0) log.LogInformation("index {Index}: definition or engine changed, rebuilding from the beginning", name);
            await index.DeleteAllAsync(ct);
            await index.CommitAsync(Commit(ChangeFeedPosition.Beginning, 0), ct);
            Status.Resumed(0, 0);
            RestoreFailures(rebuilt: true);
            return ChangeFeedPosition.Beginning;
        }
        RestoreFailures(rebuilt: false);
        await stage.LoadAsync(index, ct);
        if (stage.FedByAllPartitions && data.TryGetValue(SourceKey, out var source))
            _sourcePosition = new ChangeFeedPosition(JsonSerializer.Deserialize<Dictionary<string, long>>(source)!);
        Status.Resumed(long.Parse(data[EtagKey]), state.Entries);
        return new ChangeFeedPosition(JsonSerializer.Deserialize<Dictionary<string, long>>(data[PositionKey])!);
    }

    /// <summary>
    /// Writes a mapped batch and refreshes the near-real-time reader: searchable now. Asks for a commit (durable, with the
    /// position in the user data), which happens at most once per <see cref="CommitInterval"/> (<see cref="CommitLoopAsync"/>):
    /// batches share commits (the seed's "index merging"), but no batch waits for an fsync before its
    /// writes are visible. The commit runs while the next batch is written (one commit at a time): entries of
    /// that batch may land in it too, which is harmless, since after a crash the index resumes from the
    /// position in the commit and re-applies what followed, replacing the same entries again. Stages that keep state
    /// beside their entries get only whole batches in a commit (<see cref="IIndexStage.WholeBatchCommits"/>).
    /// </summary>
    private async Task WriteAsync(IIndexPersistence index, MappedBatch batch, bool moreWaiting, bool behind, ChannelReader<MappedBatch> next, CancellationToken ct)
    {
        if (_refreshing.IsFaulted) await _refreshing;   // a refresh that ran beside the writes failed: so does the attempt
        var started = Stopwatch.GetTimestamp();
        if (batch.Deletes.Count > 0 || batch.Documents.Count > 0)
        {
            await _writeGate.WaitAsync(ct);
            IReadOnlyList<RefusedDocument> refused;
            try { refused = await index.WriteAsync(batch.Deletes, batch.Documents, ct); }
            finally { _writeGate.Release(); }
            foreach (var r in refused) Status.Error(r.Id, r.Reason);
        }
        // Behind (full batches, more already mapped): searchable at most once per BacklogRefreshInterval. Each refresh flushes a
        // segment, which for small entries costs as much as writing the batch (a plain map index caught up at half speed);
        // nothing is searchable sooner by refreshing a backlog every batch. The last batch of a backlog always refreshes.
        // Not behind, a burst that left a batch waiting still refreshes every MinRefreshInterval: deferring it for as long as
        // bursts overlapped held writes unsearchable for 150–250 ms, and then one large refresh took as long again (freshness p99
        // 416 ms at 8,000 docs/s over 1M posts).
        var waitStarted = Stopwatch.GetTimestamp();
        var refresh = behind ? Stopwatch.GetElapsedTime(_lastRefresh) >= BacklogRefreshInterval && _refreshing.IsCompleted
            : moreWaiting ? Stopwatch.GetElapsedTime(_lastRefresh) >= MinRefreshInterval && _refreshing.IsCompleted
            : await RefreshDueAsync(next, ct);
        var waited = Stopwatch.GetElapsedTime(waitStarted);
        var lastEtag = _writtenEtag = Math.Max(Math.Max(Status.IndexedEtag, _writtenEtag), batch.Source.LastEtag);
        if (batch.Watermarks is { } marks) _writtenSource = Advanced(_writtenSource ?? SourcePosition, marks);
        if (refresh)
        {
            await _refreshing;   // one refresh at a time: what they make searchable moves forward in order
            _lastRefresh = Stopwatch.GetTimestamp();
            var (after, source) = (batch.Source.After, _writtenSource);
            _writtenSource = null;
            // Behind, a plain map index refreshes beside the next batch's writes: Lucene's indexing threads help flush what the
            // refresh queued, where in line one thread flushed while the other core waited (the embedded process idled 15–20 % of a
            // backlog). Stages that carry source watermarks or need whole batches in a commit refresh in line.
            if (moreWaiting && source is null && !_wholeBatchCommits)
                _refreshing = Task.Run(() => RefreshAsync(index, after, null, lastEtag, ct), ct);
            else await RefreshAsync(index, after, source, lastEtag, ct);
        }
        var searchable = Stopwatch.GetElapsedTime(started) - waited;
        var number = Status.Batch(new IndexBatchStats(DateTimeOffset.UtcNow, batch.Source.Count, batch.Documents.Count + batch.Deletes.Count, batch.Entries,
            batch.ReadMs, batch.MapMs, Ms(searchable), 0, batch.ApplyMs));
        lock (_commitLock)
        {
            if (_commitFailure is { } failed) { _commitFailure = null; throw new IndexEngineException($"commit failed: {failed.Message}"); }
            _nextCommit = (number, Commit(batch.Source.After, lastEtag), batch.Source.After);
            // Not cancelled with the worker: a stop waits for the commit asked for (short), so a restart does not redo that work.
            if (_committing.IsCompleted) _committing = Task.Run(() => CommitLoopAsync(index, ct), CancellationToken.None);
        }
    }

    /// <summary>
    /// Refreshes the index: searches see up to <paramref name="after"/> (and the source watermarks), the status says so (etag,
    /// entries, and the refresh counted with its time), and only then do waiters for etags up to <paramref name="etag"/> go on:
    /// what they read next is current.
    /// </summary>
    private async Task RefreshAsync(IIndexPersistence index, ChangeFeedPosition after, ChangeFeedPosition? source, long etag, CancellationToken ct)
    {
        var started = Stopwatch.GetTimestamp();
        await index.RefreshAsync(ct);
        var ms = Ms(Stopwatch.GetElapsedTime(started));
        var state = await index.StateAsync(ct);
        // Position, source watermarks and etag say what searches see: they move only with a refresh.
        _position = after;
        if (source is not null) _sourcePosition = source;
        Status.Refreshed(etag, state.Entries, ms);
        ReleaseWaiters(etag);
        _refreshed.Raise();
    }

    /// <summary>
    /// Caught up (no batch waiting): refresh now if the last refresh is at least <see cref="MinRefreshInterval"/> old; else when it
    /// is, unless the next batch arrives first (its write then refreshes for both). A steady trickle of small requests otherwise
    /// refreshes after every one of them: dozens of tiny segments a second, each flushed, merged and opened, which took most of
    /// the write thread and let batches (and the wait for them) grow after any stall.
    /// </summary>
    private async Task<bool> RefreshDueAsync(ChannelReader<MappedBatch> next, CancellationToken ct)
    {
        var wait = MinRefreshInterval - Stopwatch.GetElapsedTime(_lastRefresh);
        if (wait <= TimeSpan.Zero) return true;
        using var until = CancellationTokenSource.CreateLinkedTokenSource(ct);
        until.CancelAfter(wait);
        try { return !await next.WaitToReadAsync(until.Token); }   // false: the feed ended (the attempt stops): refresh what was written
        catch (OperationCanceledException) when (!ct.IsCancellationRequested) { return true; }
    }

    /// <summary>
    /// Commits the newest requested position until none is waiting: one commit in flight, the latest request next, at most one
    /// per <see cref="CommitInterval"/> (a stop commits at once). Every commit is a full flush and an fsync: committing after
    /// each small batch of a steady trickle (dozens a second) held the refresh behind the commit's flush and spent a fifth of
    /// the write thread's time in fsync, and what becomes searchable does not wait for it. An attempt that ends (a failure: the
    /// embedding provider away, ingest unreachable) commits at once too: it waits for this commit before its retry.
    /// </summary>
    private async Task CommitLoopAsync(IIndexPersistence index, CancellationToken attempt)
    {
        using var hurry = CancellationTokenSource.CreateLinkedTokenSource(_stop.Token, attempt);
        while (true)
        {
            var wait = CommitInterval - Stopwatch.GetElapsedTime(_lastCommit);
            if (wait > TimeSpan.Zero)
                try { await Task.Delay(wait, hurry.Token); } catch (OperationCanceledException) { }
            _lastCommit = Stopwatch.GetTimestamp();
            (long Batch, Dictionary<string, string> Data, ChangeFeedPosition Position) next;
            lock (_commitLock)
            {
                if (_nextCommit is not { } n) return;
                (next, _nextCommit) = (n, null);
            }
            var started = Stopwatch.GetTimestamp();
            var whole = _wholeBatchCommits;
            if (whole) await _writeGate.WaitAsync();
            try { await index.CommitAsync(next.Data); }
            catch (Exception e)
            {
                lock (_commitLock) { _commitFailure = e; _nextCommit = null; }
                return;
            }
            finally
            {
                if (whole) _writeGate.Release();
            }
            Volatile.Write(ref _durable, next.Position);
            Status.Committed(next.Batch, Ms(Stopwatch.GetElapsedTime(started)));
            SaveFailures();
        }
    }

    private Dictionary<string, string> Commit(ChangeFeedPosition position, long etag)
    {
        var data = new Dictionary<string, string>
        {
            [PositionKey] = JsonSerializer.Serialize(position.Next),
            [EtagKey] = etag.ToString(),
            [DefinitionKey] = _fingerprint,
        };
        if (_sourcePosition is { } source) data[SourceKey] = JsonSerializer.Serialize(source.Next);
        return data;
    }

    private static ChangeFeedPosition Advanced(ChangeFeedPosition position, IReadOnlyDictionary<string, long> marks)
    {
        var next = new Dictionary<string, long>(position.Next);
        foreach (var (partition, offset) in marks) next[partition] = Math.Max(offset, next.GetValueOrDefault(partition));
        return new ChangeFeedPosition(next);
    }

    private void ReleaseWaiters(long etag)
    {
        lock (_waiters)
        {
            foreach (var w in _waiters.Where(w => w.Etag <= etag)) w.Done.TrySetResult();
            _waiters.RemoveAll(w => w.Etag <= etag);
        }
    }

    /// <summary>
    /// The batch's oldest change was written at least a <see cref="BacklogRefreshInterval"/> ago: refreshing more often can't make
    /// it searchable sooner than that. By the writer's clock (in Kafka mode the ingest's): a skew only moves where refreshes slow down.
    /// </summary>
    internal static bool Late(FeedRead batch) =>
        batch.FirstWritten is { } written && DateTimeOffset.UtcNow - written >= BacklogRefreshInterval;

    private static double Ms(TimeSpan t) => Math.Round(t.TotalMilliseconds, 2);

    public async ValueTask DisposeAsync()
    {
        _stop.Cancel();
        try { await _loop; } catch (OperationCanceledException) { }
        _tracked?.Dispose();
        _stop.Dispose();
    }
}

/// <summary>Too many of an index's documents failed (<see cref="IndexStatus.Errored"/>): it stops until reset.</summary>
public sealed class IndexErroredException(string message) : Exception(message);
