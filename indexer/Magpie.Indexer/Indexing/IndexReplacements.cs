using Magpie.Indexer.Definitions;
using Magpie.Indexer.Shards;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Indexing;

/// <summary>
/// Side-by-side rebuilds: a changed definition is built beside the one serving queries (<see cref="IndexRegistry"/> runs both),
/// and becomes the serving one once every shard of it has caught up with the feed — then all at once, for every process. Embedded,
/// the one shard is this process's. In Kafka mode each indexer says in <c>magpie.indexes</c> which of its shards have caught up
/// (<see cref="IndexDefinitionStore.ReadyAsync"/>), and whichever indexer sees the last of them promotes the replacement; every
/// indexer reads the promotion from the same log and switches, and queries pin the version they ask for, so none mixes versions.
/// </summary>
public sealed class IndexReplacements(IndexDefinitionStore definitions, IndexRegistry registry, IIndexShards shards, IndexerOptions options, ILoggerFactory logs)
    : BackgroundService
{
    private readonly ILogger _log = logs.CreateLogger("Magpie.Indexes");

    protected override async Task ExecuteAsync(CancellationToken stop)
    {
        using var timer = new PeriodicTimer(options.ReplacementCheckInterval);
        while (await timer.WaitForNextTickAsync(stop))
        {
            try { await CheckAsync(stop); }
            catch (OperationCanceledException) when (stop.IsCancellationRequested) { break; }
            catch (Exception e) { _log.LogWarning("checking side-by-side replacements: {Error}", e.Message); }
        }
    }

    /// <summary>Promotes every replacement whose shards have all caught up (saying so for the shards here first, in Kafka mode).</summary>
    public async Task CheckAsync(CancellationToken ct)
    {
        var pending = definitions.Pending;
        if (pending.Count == 0) return;
        var end = await shards.EndAsync(ct);
        foreach (var (name, definition) in pending)
        {
            var version = definition.Fingerprint();
            var caughtUp = new List<int>();
            foreach (var shard in shards.Owned)
                if (await CaughtUpAsync(name, version, shard, end, ct)) caughtUp.Add(shard);
            if (shards.Every.All(caughtUp.Contains))
            {
                await PromoteAsync(name, version, "caught up", ct);
                continue;
            }
            var ready = definitions.Ready(name);
            foreach (var shard in caughtUp.Where(s => ready.GetValueOrDefault(s) != version))
                await definitions.ReadyAsync(name, shard, version, ct);
            ready = definitions.Ready(name);
            if (shards.Every.All(s => ready.GetValueOrDefault(s) == version || caughtUp.Contains(s)))
                await PromoteAsync(name, version, "every shard caught up", ct);
        }
    }

    /// <summary>Makes the replacement of <paramref name="name"/> serve now, caught up or not (<c>POST /indexes/{name}/swap</c>); false when there is none.</summary>
    public async Task<bool> SwapAsync(string name, CancellationToken ct) =>
        definitions.Pending.GetValueOrDefault(name) is { } next && await PromoteAsync(name, next.Fingerprint(), "swap asked for", ct);

    private async Task<bool> PromoteAsync(string name, string version, string why, CancellationToken ct)
    {
        if (!await definitions.PromoteAsync(name, version, ct)) return false;
        _log.LogInformation("index {Index}: version {Version} now serves queries ({Why})", name, version, why);
        return true;
    }

    /// <summary>Every worker of the version on the shard (both sides of a Kafka map/reduce index) has opened its index and is not behind the feed.</summary>
    private async Task<bool> CaughtUpAsync(string name, string version, int shard, IReadOnlyDictionary<string, long>? end, CancellationToken ct)
    {
        var workers = registry.Workers(name, version).Concat(registry.MapSide(name, version)).Where(w => w.Shard == shard).ToList();
        if (workers.Count == 0 || workers.Any(w => w.Index is null || w.Status.Snapshot().Failure is not null)) return false;
        foreach (var worker in workers)
            if (await worker.IsStaleAsync(end, wait: false, TimeSpan.Zero, ct)) return false;
        return true;
    }
}
