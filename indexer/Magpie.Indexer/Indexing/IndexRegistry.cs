using System.Security.Cryptography;
using System.Text;
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
/// One worker per defined index and owned shard, kept in step with both: a changed definition restarts
/// its workers (which rebuild: the commit's fingerprint no longer matches), a deleted one stops and its
/// files go; a shard gained (Kafka rebalance) starts a worker on its local Lucene index, resuming from its
/// commit or rebuilding from the compacted topic; a shard lost stops its worker and keeps the files.
/// </summary>
/// <remarks>The engine (<paramref name="engine"/>, Lucene today) is chosen by the indexer's wiring and owned by whoever made it:
/// the registry opens, writes and closes indexes in it, and leaves it open.</remarks>
public sealed class IndexRegistry(IndexDefinitionStore definitions, IIndexShards shards, IndexerOptions options, IIndexEngine engine, ILoggerFactory logs,
    Contracts.Documents.IDocumentOutput? documents = null)
    : IHostedService, IAsyncDisposable, IIndexWaiter, ILocalShards
{
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly Dictionary<WorkerKey, (IndexDefinition Definition, IndexWorker Worker)> _workers = [];

    /// <summary>
    /// A worker of one index on one shard. <see cref="MapSide"/>: Kafka mode's map stage of a map/reduce index (publishes to the
    /// mapped topic); the other worker of that shard (reduce side) holds the results. Every other index has just the one.
    /// </summary>
    private readonly record struct WorkerKey(string Name, int Shard, bool MapSide = false);
    private readonly ILogger _log = logs.CreateLogger("Magpie.Indexes");
    private bool _disposed;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        IndexingMetrics.Observe(this);
        definitions.Changed += () => _ = ReconcileLoggedAsync();
        shards.Changed += () => _ = ReconcileLoggedAsync();
        await shards.StartAsync(cancellationToken);
        await ReconcileAsync();
    }

    public async Task StopAsync(CancellationToken cancellationToken) => await DisposeAsync();

    /// <summary>The running workers holding an index's results, one per owned shard, by shard number (empty if none run here).</summary>
    public IReadOnlyList<IndexWorker> Workers(string name) => WorkersOf(name, mapSide: false);

    IReadOnlyList<ILocalShard> ILocalShards.Shards(string index) => Workers(index);

    /// <summary>Kafka mode's map-side workers of a map/reduce index (their errors are the index's map errors); empty otherwise.</summary>
    public IReadOnlyList<IndexWorker> MapSide(string name) => WorkersOf(name, mapSide: true);

    /// <summary>
    /// Every running worker, for metrics: its index, its side ("map" for Kafka mode's map stage of a map/reduce index, else
    /// "results"), and whether it reduces (the results side of a map/reduce index).
    /// </summary>
    public IReadOnlyList<(string Index, string Side, bool Reduces, IndexWorker Worker)> Running()
    {
        lock (_workers)
            return _workers.Select(w => (w.Key.Name, w.Key.MapSide ? "map" : "results", !w.Key.MapSide && w.Value.Definition.Reduce is not null, w.Value.Worker)).ToList();
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

    private List<IndexWorker> WorkersOf(string name, bool mapSide)
    {
        lock (_workers) return _workers.Where(w => w.Key.Name == name && w.Key.MapSide == mapSide).OrderBy(w => w.Key.Shard).Select(w => w.Value.Worker).ToList();
    }

    public async Task<bool> WaitForEtagAsync(long etag, TimeSpan timeout, CancellationToken ct = default)
    {
        List<IndexWorker> workers;
        lock (_workers) workers = _workers.Values.Select(w => w.Worker).ToList();
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
        List<(WorkerKey Key, IndexWorker Worker)> workers;
        lock (_workers) workers = _workers.Select(w => (w.Key, w.Value.Worker)).ToList();
        foreach (var (name, definition) in definitions.Current)
        foreach (var shard in owned)
            if (!workers.Any(w => w.Key.Name == name && w.Key.Shard == shard)) return false;   // not started here yet
        var results = await Task.WhenAll(workers.Select(w => w.Worker.Covers(all) is { Count: > 0 } asked
            ? w.Worker.WaitForPositionAsync(asked, timeout, ct)
            : Task.FromResult(true)));
        return results.All(r => r);
    }

    public async Task ResetAsync(string name)
    {
        await _gate.WaitAsync();
        try
        {
            foreach (var key in KeysOf(name)) await StopWorkerAsync(key);
            DeleteFiles(name);
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
            var owned = shards.Owned;
            List<WorkerKey> running;
            lock (_workers) running = [.. _workers.Keys];
            foreach (var key in running)
            {
                var same = current.TryGetValue(key.Name, out var d) && ReferenceEquals(d, _workers[key].Definition);
                if (same && owned.Contains(key.Shard)) continue;
                await StopWorkerAsync(key);
            }
            foreach (var name in running.Select(k => k.Name).Distinct().Where(n => !current.ContainsKey(n))) DeleteFiles(name);
            foreach (var (name, definition) in current)
            foreach (var shard in owned)
            {
                if (_workers.Keys.Any(k => k.Name == name && k.Shard == shard)) continue;
                foreach (var (key, worker) in WorkersFor(name, definition, shard))
                {
                    lock (_workers) _workers[key] = (definition, worker);
                    worker.Start();
                }
            }
        }
        finally { _gate.Release(); }
    }

    /// <summary>
    /// The workers of one index on one shard: a map index, or an embedded map/reduce index, is one worker on the shard's
    /// feed. Kafka mode splits a map/reduce index in two: the map side reads the changes and publishes to the mapped
    /// topic, the reduce side reads the same partition number of the mapped topic and holds the results.
    /// </summary>
    private List<(WorkerKey, IndexWorker)> WorkersFor(string name, IndexDefinition definition, int shard)
    {
        IndexWorker Worker(IChangeFeed feed, string directory, Func<IIndexErrors, CancellationToken, IIndexStage> stage) =>
            new(name, definition, feed, engine, directory, stage, _log, options.BatchSize, options.Retry) { Shard = shard };
        var limits = options.ScriptLimits;
        if (definition.Reduce is null)
            return [(new WorkerKey(name, shard), Worker(shards.FeedOf(shard), DirectoryOf(name, shard), (s, stop) => new MapStage(definition, limits with { Stop = stop }, s, options.StoreSource)))];
        if (shards.Mapped is not { } mapped)
            return [(new WorkerKey(name, shard), Worker(shards.FeedOf(shard), DirectoryOf(name, shard), (s, stop) => new LocalMapReduceStage(definition, limits with { Stop = stop }, s, documents)))];
        var topic = mapped.TopicOf(name, definition);
        var remap = _remapping.Contains(name);
        return
        [
            (new WorkerKey(name, shard, MapSide: true),
                Worker(shards.FeedOf(shard), DirectoryOf(name, shard) + "-map", (s, stop) => new MappedTopicStage(definition, limits with { Stop = stop }, s, mapped, topic, shard, remap))),
            (new WorkerKey(name, shard), Worker(mapped.FeedOf(topic, shard), DirectoryOf(name, shard), (s, stop) => new TopicReduceStage(definition, limits with { Stop = stop }, s, documents, mapped, topic))),
        ];
    }

    private List<WorkerKey> KeysOf(string name)
    {
        lock (_workers) return _workers.Keys.Where(k => k.Name == name).ToList();
    }

    private async Task StopWorkerAsync(WorkerKey key)
    {
        (IndexDefinition, IndexWorker) entry;
        lock (_workers)
            if (!_workers.Remove(key, out entry)) return;
        var worker = entry.Item2;
        var stopping = Task.Run(async () =>
        {
            await worker.DisposeAsync();
            worker.Index?.Close();
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

    private void DeleteFiles(string name)
    {
        if (Directory.Exists(DirectoryOf(name))) Directory.Delete(DirectoryOf(name), recursive: true);
    }

    /// <summary>Index names may hold '/', so the folder is the name made safe plus a short hash (two names never share one).</summary>
    private string DirectoryOf(string name) => Path.Combine(options.DataDir, "indexes",
        name.Replace('/', '_') + "-" + Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(name)))[..8].ToLowerInvariant());

    /// <summary>Embedded: the index folder itself; Kafka mode: one subfolder per partition.</summary>
    private string DirectoryOf(string name, int shard) =>
        shard == IIndexShards.All ? DirectoryOf(name) : Path.Combine(DirectoryOf(name), $"partition-{shard}");

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
