using Magpie.Contracts;
using System.Security.Cryptography;
using System.Text;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Search;
using Magpie.Indexer.Definitions;
using Magpie.Indexer.Indexing.Stages;
using Magpie.Indexer.Engine;
using Magpie.Indexer.MapReduce;
using Magpie.Indexer.Shards;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Indexing;

/// <summary>
/// One worker per defined index version and owned shard, kept in step with both. An index has the version that serves queries
/// and, while a changed definition is built side by side, its replacement: each version in its own folder
/// (<c>indexes/{name}/{fingerprint}</c>). When the replacement has caught up (<see cref="IndexReplacements"/>) it becomes the
/// serving version and the replaced one retires: it stops indexing at once, stays open for queries already pinned to it and
/// streams holding it (<see cref="IndexerOptions.ReplacedGrace"/>), then its files go. A deleted index retires the same way. A
/// shard gained (Kafka rebalance) starts a worker on its local Lucene index, resuming from its commit or rebuilding from the
/// compacted topic; a shard lost stops its worker and keeps the files.
/// </summary>
/// <remarks>The engine (<paramref name="engine"/>, Lucene today) is chosen by the indexer's wiring and owned by whoever made it:
/// the registry opens, writes and closes indexes in it, and leaves it open.</remarks>
public sealed class IndexRegistry(IndexDefinitionStore definitions, IIndexShards shards, IndexerOptions options, IIndexEngine engine, ILoggerFactory logs,
    Contracts.Documents.IDocumentOutput? documents = null, Contracts.Documents.IDocumentLookup? lookup = null)
    : IHostedService, IAsyncDisposable, IIndexWaiter, ILocalShards
{
    private readonly SemaphoreSlim _gate = new(1, 1);

    /// <summary>Where maps' <c>load(id)</c> reads documents (the store, or an ingest process in Kafka mode); null: nowhere.</summary>
    public Contracts.Documents.IDocumentLookup? Documents => lookup;
    private readonly Dictionary<WorkerKey, RunningWorker> _workers = [];

    /// <summary>Replaced (or deleted) versions' workers, stopped but open for queries pinned to them until they retire.</summary>
    private readonly Dictionary<WorkerKey, IndexWorker> _retiring = [];

    /// <summary>Versions retired here, by index (the latest few): a query pinned to one is told to ask for the serving version.</summary>
    private readonly Dictionary<string, List<string>> _replaced = [];

    /// <summary>
    /// A worker of one version of an index on one shard. <see cref="MapSide"/>: Kafka mode's map stage of a map/reduce index
    /// (publishes to the mapped topic); the other worker of that shard (reduce side) holds the results. Every other index has just the one.
    /// </summary>
    private readonly record struct WorkerKey(string Name, string Version, int Shard, bool MapSide = false);

    /// <summary>A running worker, its definition, and whether it was started serving (a replacement writes no output collection).</summary>
    private sealed record RunningWorker(IndexDefinition Definition, IndexWorker Worker, bool Serving);
    private readonly ILogger _log = logs.CreateLogger("Magpie.Indexes");
    private bool _disposed;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        IndexingMetrics.Observe(this);
        definitions.Changed += () => _ = ReconcileLoggedAsync();
        definitions.RetryAsked += name => Retry(name);
        shards.Changed += () => _ = ReconcileLoggedAsync();
        await shards.StartAsync(cancellationToken);
        await ReconcileAsync();
    }

    public async Task StopAsync(CancellationToken cancellationToken) => await DisposeAsync();

    /// <summary>
    /// The running workers holding an index's results, one per owned shard, by shard number (empty if none run here): those of the
    /// serving version, or of <paramref name="version"/> (the replacement being built, or a replaced one still open).
    /// </summary>
    public IReadOnlyList<IndexWorker> Workers(string name, string? version = null) => WorkersOf(name, version, mapSide: false);

    IReadOnlyList<ILocalShard> ILocalShards.Shards(string index, string? version) => Workers(index, version);

    public bool Replaced(string index, string version)
    {
        lock (_workers) return _replaced.TryGetValue(index, out var versions) && versions.Contains(version);
    }

    /// <summary>Kafka mode's map-side workers of a map/reduce index (their errors are the index's map errors); empty otherwise.</summary>
    public IReadOnlyList<IndexWorker> MapSide(string name, string? version = null) => WorkersOf(name, version, mapSide: true);

    /// <summary>
    /// Every running worker, for metrics: its index, its side ("map" for Kafka mode's map stage of a map/reduce index, else
    /// "results"), and whether it reduces (the results side of a map/reduce index).
    /// </summary>
    public IReadOnlyList<(string Index, string Side, bool Reduces, IndexWorker Worker)> Running()
    {
        lock (_workers)
            return _workers.Select(w => (w.Key.Name + (w.Value.Serving ? "" : " (replacement)"), w.Key.MapSide ? "map" : "results",
                !w.Key.MapSide && w.Value.Definition.Reduce is not null, w.Value.Worker)).ToList();
    }

    /// <summary>
    /// Null when every open index of this process answers a search within <paramref name="timeout"/>, else the first that
    /// does not (for <c>/readyz</c>: a wedged engine takes the process out of rotation). Errors of documents, and indexes
    /// stopped for their definition (quarantined, errored), are the index's state, not the process's.
    /// </summary>
    public async Task<string?> UnansweringAsync(TimeSpan timeout, CancellationToken ct)
    {
        foreach (var (index, side, _, worker) in Running())
        {
            if (worker.Index is not { } engine) continue;
            try
            {
                await engine.SearchAsync(new Contracts.Search.SearchRequest(new Contracts.Search.TermQuery("@id", ""), [], 1), ct).WaitAsync(timeout, ct);
            }
            catch (TimeoutException) { return $"index {index} ({side}) did not answer a search within {timeout.TotalSeconds:0} s"; }
            catch (Exception e) when (e is not OperationCanceledException) { return $"index {index} ({side}) cannot answer a search: {e.Message}"; }
        }
        return null;
    }

    private List<IndexWorker> WorkersOf(string name, string? version, bool mapSide)
    {
        version ??= definitions.Current.GetValueOrDefault(name)?.Fingerprint();
        lock (_workers)
            return _workers.Select(w => (w.Key, w.Value.Worker)).Concat(_retiring.Select(r => (r.Key, Worker: r.Value)))
                .Where(w => w.Key.Name == name && w.Key.Version == version && w.Key.MapSide == mapSide)
                .OrderBy(w => w.Key.Shard).Select(w => w.Worker).ToList();
    }

    /// <summary>The workers of the versions that serve queries (a replacement being built is not what a reader waits for).</summary>
    private List<(WorkerKey Key, IndexWorker Worker)> Serving()
    {
        var current = definitions.Current;
        lock (_workers)
            return _workers.Where(w => current.TryGetValue(w.Key.Name, out var d) && d.Fingerprint() == w.Key.Version).Select(w => (w.Key, w.Value.Worker)).ToList();
    }

    public async Task<bool> WaitForEtagAsync(long etag, TimeSpan timeout, CancellationToken ct = default)
    {
        var workers = Serving().Select(w => w.Worker).ToList();
        var results = await Task.WhenAll(workers.Select(w => w.WaitForEtagAsync(etag, timeout, ct)));
        return results.All(r => r);
    }

    /// <summary>
    /// Kafka mode, read-your-writes for another process's write: true once every index here has seen each partition of
    /// <paramref name="target"/> (partition → next offset) up to its offset — map indexes on the shards of those
    /// partitions, the reduce side of map/reduce indexes on every shard here (any map stage may feed it); false on
    /// timeout, or when this process doesn't hold one of those partitions (anymore) or hasn't started an index on it yet.
    /// The caller asks every indexer of the group and makes sure each partition of the target is owned by one of them.
    /// </summary>
    public async Task<bool> WaitForPositionsAsync(IReadOnlyDictionary<int, long> target, TimeSpan timeout, CancellationToken ct = default)
    {
        var owned = shards.Owned;
        var all = target.ToDictionary(t => t.Key.ToString(), t => t.Value);
        var workers = Serving();
        foreach (var (name, definition) in definitions.Current)
        foreach (var shard in owned)
            if (!workers.Any(w => w.Key.Name == name && w.Key.Shard == shard)) return false;   // not started here yet
        var results = await Task.WhenAll(workers.Select(w => w.Worker.Covers(all) is { Count: > 0 } asked
            ? w.Worker.WaitForPositionAsync(asked, timeout, ct)
            : Task.FromResult(true)));
        return results.All(r => r);
    }

    /// <summary>Rebuilds an index in place: every version of it here starts over from the beginning of the feed.</summary>
    /// <summary>Retries the failed documents of the serving version's workers here (both sides of a Kafka map/reduce index); how many.</summary>
    public int Retry(string name)
    {
        var count = Workers(name).Concat(MapSide(name)).Sum(w => w.Retry());
        if (count > 0) _log.LogInformation("index {Index}: retrying {Count} failed documents", name, count);
        return count;
    }

    public async Task ResetAsync(string name)
    {
        await _gate.WaitAsync();
        try
        {
            foreach (var key in KeysOf(name)) await StopWorkerAsync(key);
            DeleteFiles(DirectoryOf(name));
            _remapping.Add(name);
        }
        finally { _gate.Release(); }
        try { await ReconcileAsync(); }
        finally { _remapping.Remove(name); }
    }

    /// <summary>Indexes being reset: their Kafka-mode map side maps every document again instead of taking over where it was published to.</summary>
    private readonly HashSet<string> _remapping = [];

    private async Task ReconcileLoggedAsync()
    {
        try { await ReconcileAsync(); }
        catch (Exception e) { _log.LogError(e, "index reconcile failed"); }
    }

    private async Task ReconcileAsync()
    {
        await _gate.WaitAsync();
        try
        {
            if (_disposed) return;   // a shard revoked while shutting down must not start anything
            var current = definitions.Current;
            var wanted = Wanted(current, definitions.Pending);
            var owned = shards.Owned;
            List<KeyValuePair<WorkerKey, RunningWorker>> running;
            lock (_workers) running = [.. _workers];
            foreach (var (key, run) in running)
            {
                if (!wanted.ContainsKey((key.Name, key.Version)))
                {
                    // Replaced by its side-by-side rebuild, or deleted: retired. A replacement dropped before it served just stops.
                    if (run.Serving) await RetireAsync(key, current.GetValueOrDefault(key.Name));
                    else await StopWorkerAsync(key, deleteFiles: true);
                }
                else if (!owned.Contains(key.Shard)) await StopWorkerAsync(key);
            }
            // After the retirements: a promoted index with an output collection starts over from the keys the replaced one left.
            foreach (var (key, run) in running)
                if (wanted.GetValueOrDefault((key.Name, key.Version)) && !run.Serving && owned.Contains(key.Shard)) await PromotedAsync(key, run);
            if (!_cleaned)
            {
                _cleaned = true;
                await RemoveStrayVersionsAsync(wanted.Keys, current);
            }
            foreach (var ((name, version), serving) in wanted)
            {
                var definition = serving ? current[name] : definitions.Pending[name];
                lock (_workers) _replaced.GetValueOrDefault(name)?.Remove(version);   // put back after it was replaced: it serves again
                foreach (var shard in owned)
                {
                    lock (_workers) if (_workers.Keys.Any(k => k.Name == name && k.Version == version && k.Shard == shard)) continue;
                    foreach (var (key, worker) in WorkersFor(name, version, definition, shard, serving))
                    {
                        lock (_workers) _workers[key] = new RunningWorker(definition, worker, serving);
                        worker.Start();
                    }
                }
            }
        }
        finally { _gate.Release(); }
    }

    /// <summary>Every version that should run: each index's serving one (true) and its replacement, if one is being built (false).</summary>
    private static Dictionary<(string Name, string Version), bool> Wanted(IReadOnlyDictionary<string, IndexDefinition> current,
        IReadOnlyDictionary<string, IndexDefinition> pending)
    {
        var wanted = current.ToDictionary(c => (c.Key, c.Value.Fingerprint()), _ => true);
        foreach (var (name, definition) in pending) wanted.TryAdd((name, definition.Fingerprint()), false);
        return wanted;
    }

    private bool _cleaned;

    /// <summary>
    /// Once, at the first reconcile: folders of versions no longer wanted (a crash during a retirement, a replacement cancelled
    /// while this process was down, the layout before versions had folders) go; indexes no longer defined keep theirs until deleted.
    /// </summary>
    private async Task RemoveStrayVersionsAsync(IEnumerable<(string Name, string Version)> wanted, IReadOnlyDictionary<string, IndexDefinition> serving)
    {
        foreach (var (name, versions) in wanted.GroupBy(w => w.Name, w => w.Version).Select(g => (g.Key, g.ToHashSet())))
        {
            var folder = DirectoryOf(name);
            if (!Directory.Exists(folder)) continue;
            foreach (var entry in Directory.EnumerateFileSystemEntries(folder))
            {
                if (versions.Contains(Path.GetFileName(entry))) continue;
                if (serving.GetValueOrDefault(name) is { OutputReduceToCollection: not null } definition && Directory.Exists(entry))
                    await HandOverStrayAsync(name, entry, DirectoryOf(name, definition.Fingerprint(), IIndexShards.All), definition.OutputReduceToCollection!);
                _log.LogInformation("index {Index}: removing {Entry}, which no version of the index uses", name, entry);
                if (Directory.Exists(entry)) Directory.Delete(entry, recursive: true); else File.Delete(entry);
            }
        }
    }

    /// <summary>
    /// A version killed between its replacement's promotion and its retirement never handed its output collection over, and what it
    /// wrote may be in no commit (outputs are written before the index commits). Every output document names the version that
    /// wrote it: where the store can list the collection (in process, or through the ingest process named in Kafka mode), the
    /// documents naming the killed version go now, whichever indexer held their keys; the keys the killed version committed here go
    /// too (documents written before versions were named). The serving version then writes its results again: as it rebuilds, or
    /// from its handover (prepared here, per partition folder in Kafka mode) when it loads.
    /// </summary>
    private async Task HandOverStrayAsync(string name, string stray, string servingFolder, string collection)
    {
        if (documents is null) return;
        var partitions = Directory.EnumerateDirectories(stray, "partition-*").Where(d => !d.EndsWith("-map", StringComparison.Ordinal)).ToList();
        var output = new ReduceOutput(collection, documents, Path.GetFileName(stray));
        try
        {
            // Conditional deletes: a document the serving version (here or on another indexer) rewrote since the listing stays.
            var named = await documents.ListAsync(collection, ReduceOutput.VersionMetadata, Path.GetFileName(stray));
            if (named is { Count: > 0 })
            {
                foreach (var chunk in named.Chunk(1024)) await documents.WriteAsync([.. chunk.Select(d => new OutputDocument(d.Id, collection, null, d.Etag))]);
                _log.LogInformation("index {Index}: {Count} documents of {Collection} left by a replaced version deleted; the serving version writes its own", name, named.Count, collection);
            }
            foreach (var (from, to) in partitions.Count > 0
                         ? partitions.Select(p => (p, Path.Combine(servingFolder, Path.GetFileName(p))))
                         : [(stray, servingFolder)])
            {
                var index = engine.Open(from);
                List<string> keys;
                try { keys = [.. index.ScanState().Select(e => e.Key).Distinct()]; }
                finally { index.Close(); }
                OutputHandover.Prepare(to, (OutputHandover.Read(to) ?? []).Concat(keys));
                foreach (var chunk in keys.Chunk(1024)) await output.WriteAsync(new ReduceFlush([], [.. chunk], [], []), CancellationToken.None);
            }
        }
        catch (Exception e) { _log.LogError(e, "index {Index}: the output collection {Collection} left by the replaced version in {Folder} could not be handed over", name, collection, stray); }
    }

    /// <summary>
    /// A replacement just became the serving version. Its workers go on as they are, unless the index writes an output collection:
    /// then they start again writing it, and first hand it over (<see cref="OutputHandover"/>: the keys the replaced version held
    /// were kept in their folder when it retired).
    /// </summary>
    private async Task PromotedAsync(WorkerKey key, RunningWorker run)
    {
        if (run.Definition.OutputReduceToCollection is null || key.MapSide)
        {
            lock (_workers) _workers[key] = run with { Serving = true };
            return;
        }
        await StopWorkerAsync(key);
        foreach (var (k, worker) in WorkersFor(key.Name, key.Version, run.Definition, key.Shard, serving: true).Where(w => w.Key == key))
        {
            lock (_workers) _workers[k] = new RunningWorker(run.Definition, worker, Serving: true);
            worker.Start();
        }
    }

    /// <summary>
    /// A serving version replaced (or deleted): it stops indexing now, hands its output collection's keys to the version replacing
    /// it, and stays open for queries pinned to it for <see cref="IndexerOptions.ReplacedGrace"/> and while streams hold it;
    /// then it closes, its folder goes, and (Kafka mode) its mapped topic.
    /// </summary>
    private async Task RetireAsync(WorkerKey key, IndexDefinition? replacement)
    {
        RunningWorker run;
        lock (_workers)
        {
            if (!_workers.Remove(key, out run!)) return;
            _retiring[key] = run.Worker;
        }
        await run.Worker.DisposeAsync().AsTask().WaitAsync(options.WorkerStopTimeout).ContinueWith(_ => { }, TaskScheduler.Default);
        if (replacement?.OutputReduceToCollection is not null && run.Definition.OutputReduceToCollection is not null && !key.MapSide && run.Worker.Index is { } old)
        {
            try { OutputHandover.Prepare(DirectoryOf(key.Name, replacement.Fingerprint(), key.Shard), old.ScanState().Select(e => e.Key)); }
            catch (Exception e) { _log.LogError(e, "index {Index}: the keys of the replaced version could not be read for its output collection's handover", key.Name); }
        }
        _log.LogInformation("index {Index}: version {Version} of shard {Shard}{Side} replaced; it closes once queries pinned to it are done",
            key.Name, key.Version, key.Shard, key.MapSide ? " (map side)" : "");
        _ = Task.Run(async () =>
        {
            await Task.Delay(options.ReplacedGrace);
            // Streams holding a snapshot keep it open (their snapshots are released when they end, or by the leases' keep-alive).
            await Waits.UntilAsync(() => run.Worker.HeldSnapshots == 0 || _disposed, Timeout.InfiniteTimeSpan, CancellationToken.None, poll: TimeSpan.FromMilliseconds(100));
            lock (_workers)
            {
                _retiring.Remove(key);
                var versions = _replaced.TryGetValue(key.Name, out var v) ? v : _replaced[key.Name] = [];
                if (!versions.Contains(key.Version)) versions.Add(key.Version);
                if (versions.Count > 16) versions.RemoveAt(0);
            }
            run.Worker.Index?.Close();
            await _gate.WaitAsync();
            try
            {
                DeleteFiles(FolderOf(key));
                var versionFolder = Path.Combine(DirectoryOf(key.Name), key.Version);
                if (Directory.Exists(versionFolder) && !Directory.EnumerateFileSystemEntries(versionFolder).Any()) Directory.Delete(versionFolder);
                if (Directory.Exists(DirectoryOf(key.Name)) && !Directory.EnumerateFileSystemEntries(DirectoryOf(key.Name)).Any()) Directory.Delete(DirectoryOf(key.Name));
            }
            finally { _gate.Release(); }
            if (run.Definition.Reduce is not null && shards.Mapped is { } mapped && !key.MapSide)
                await mapped.DeleteAsync(mapped.TopicOf(key.Name, run.Definition));
        }).ContinueWith(t => _log.LogError(t.Exception, "index {Index}: retiring version {Version} failed", key.Name, key.Version), TaskContinuationOptions.OnlyOnFaulted);
    }

    /// <summary>
    /// The workers of one index on one shard: a map index, or an embedded map/reduce index, is one worker on the shard's
    /// feed. Kafka mode splits a map/reduce index in two: the map side reads the changes and publishes to the mapped
    /// topic, the reduce side reads the same partition number of the mapped topic and holds the results.
    /// </summary>
    /// <remarks>A replacement (not <paramref name="serving"/>) writes no output collection: the collection changes owner at the switch.</remarks>
    private List<(WorkerKey Key, IndexWorker Worker)> WorkersFor(string name, string version, IndexDefinition definition, int shard, bool serving)
    {
        var directory = DirectoryOf(name, version, shard);
        var limits = options.ScriptLimits;
        // Loaded documents may live on any shard: such an index follows every shard's changes beside its own (LoadFollowingFeed).
        var loads = shards.Mapped is not null && MapReduce.DefinitionCompiler.Loads(definition, limits);
        IndexWorker Worker(IChangeFeed feed, string folder, Func<IIndexErrors, CancellationToken, IIndexStage> stage) =>
            new(name, definition, feed, engine, folder, stage, _log, options.BatchSize, options.Retry) { Shard = shard, FollowsLoads = loads };
        var source = loads ? shards.FeedFollowingLoadsOf(shard) : shards.FeedOf(shard);
        var output = serving ? documents : null;
        var handover = serving && definition.OutputReduceToCollection is not null ? directory : null;
        if (definition.Reduce is null)
            return [(new WorkerKey(name, version, shard), Worker(source, directory, (s, stop) => new MapStage(definition, limits with { Stop = stop }, s, options.StoreSource, lookup, definitions.Connections)))];
        if (shards.Mapped is not { } mapped)
            return [(new WorkerKey(name, version, shard), Worker(shards.FeedOf(shard), directory, (s, stop) => new LocalMapReduceStage(definition, limits with { Stop = stop }, s, output, handover, lookup)))];
        var topic = mapped.TopicOf(name, definition);
        var remap = _remapping.Contains(name);
        return
        [
            (new WorkerKey(name, version, shard, MapSide: true),
                Worker(source, FolderOf(new WorkerKey(name, version, shard, MapSide: true)), (s, stop) => new MappedTopicStage(definition, limits with { Stop = stop }, s, mapped, topic, shard, remap, lookup))),
            (new WorkerKey(name, version, shard), Worker(mapped.FeedOf(topic, shard), directory, (s, stop) => new TopicReduceStage(definition, limits with { Stop = stop }, s, output, mapped, topic, handover))),
        ];
    }

    private List<WorkerKey> KeysOf(string name)
    {
        lock (_workers) return _workers.Keys.Where(k => k.Name == name).ToList();
    }

    private async Task StopWorkerAsync(WorkerKey key, bool deleteFiles = false)
    {
        RunningWorker? entry;
        lock (_workers)
            if (!_workers.Remove(key, out entry)) return;
        var worker = entry.Worker;
        var stopping = Task.Run(async () =>
        {
            await worker.DisposeAsync();
            worker.Index?.Close();
            if (deleteFiles) DeleteFiles(FolderOf(key));
        });
        // Past the timeout the stop finishes in the background (IndexerOptions.WorkerStopTimeout); a worker started on the same
        // shard meanwhile retries until the old one lets go of the index's files.
        try { await stopping.WaitAsync(options.WorkerStopTimeout); }
        catch (TimeoutException)
        {
            _log.LogError("index {Index}: the worker of shard {Shard}{Side} did not stop within {Seconds} s; it stops in the background while the other indexes go on",
                key.Name, key.Shard, key.MapSide ? " (map side)" : "", options.WorkerStopTimeout.TotalSeconds);
        }
    }

    private static void DeleteFiles(string folder)
    {
        if (Directory.Exists(folder)) Directory.Delete(folder, recursive: true);
    }

    /// <summary>Index names may hold '/', so the folder is the name made safe plus a short hash (two names never share one).</summary>
    private string DirectoryOf(string name) => Path.Combine(options.DataDir, "indexes",
        name.Replace('/', '_') + "-" + Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(name)))[..8].ToLowerInvariant());

    /// <summary>One worker's folder: its version's shard folder, with "-map" for Kafka mode's map side of a map/reduce index.</summary>
    private string FolderOf(WorkerKey key) => DirectoryOf(key.Name, key.Version, key.Shard) + (key.MapSide ? "-map" : "");

    /// <summary>A version's folder (named by its fingerprint): embedded the index itself; Kafka mode: one subfolder per partition.</summary>
    private string DirectoryOf(string name, string version, int shard) =>
        shard == IIndexShards.All ? Path.Combine(DirectoryOf(name), version) : Path.Combine(DirectoryOf(name), version, $"partition-{shard}");

    public async ValueTask DisposeAsync()
    {
        await _gate.WaitAsync();
        try
        {
            _disposed = true;
            List<WorkerKey> keys;
            lock (_workers) keys = [.. _workers.Keys];
            foreach (var key in keys) await StopWorkerAsync(key);
            await shards.DisposeAsync();
        }
        finally { _gate.Release(); }
    }
}
