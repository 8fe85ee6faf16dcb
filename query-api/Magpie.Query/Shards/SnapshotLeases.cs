using System.Collections.Concurrent;
using Magpie.Contracts.Search;

namespace Magpie.Query.Shards;

/// <summary>One shard's held point in time: the worker it came from (for its position) and the Lucene snapshot.</summary>
public sealed record HeldShard(ILocalShard Worker, IShardSearcher Index, long Snapshot);

/// <summary>
/// The index snapshots streams hold on this process's shards, by lease id. A stream's coordinator releases its
/// lease when the stream ends or its client goes away; a lease nobody used for <see cref="KeepAlive"/> (its
/// coordinator died) is released by the sweep, so a lost stream never pins segment files for long.
/// </summary>
public sealed class SnapshotLeases : IAsyncDisposable
{
    public static readonly TimeSpan KeepAlive = TimeSpan.FromSeconds(60);

    private sealed class Lease(IReadOnlyList<HeldShard> shards)
    {
        public IReadOnlyList<HeldShard> Shards { get; } = shards;
        public long LastUsed = Environment.TickCount64;
    }

    private readonly ConcurrentDictionary<string, Lease> _leases = new();
    private readonly Timer _sweep;
    private readonly TimeSpan _keepAlive;

    public SnapshotLeases(TimeSpan? keepAlive = null)
    {
        _keepAlive = keepAlive ?? KeepAlive;
        var every = TimeSpan.FromMilliseconds(Math.Max(100, _keepAlive.TotalMilliseconds / 4));
        _sweep = new Timer(_ => _ = SweepAsync(), null, every, every);
    }

    /// <summary>Leases held now (for status and tests).</summary>
    public int Count => _leases.Count;

    /// <summary>Holds the current searcher of each of <paramref name="workers"/>' indexes; returns the lease id and what it holds.</summary>
    public async Task<(string Id, IReadOnlyList<HeldShard> Shards)> AcquireAsync(IReadOnlyList<ILocalShard> workers, CancellationToken ct)
    {
        var held = new List<HeldShard>(workers.Count);
        try
        {
            foreach (var w in workers)
            {
                held.Add(new HeldShard(w, w.Searcher!, w.Searcher!.AcquireSnapshot()));
                w.SnapshotHeld(+1);
            }
        }
        catch
        {
            await ReleaseAllAsync(held);
            throw;
        }
        var id = Guid.NewGuid().ToString("N");
        _leases[id] = new Lease(held);
        return (id, held);
    }

    /// <summary>The shards a lease holds, keeping it alive; null when it was released or expired.</summary>
    public IReadOnlyList<HeldShard>? Use(string id)
    {
        if (!_leases.TryGetValue(id, out var lease)) return null;
        Volatile.Write(ref lease.LastUsed, Environment.TickCount64);
        return lease.Shards;
    }

    public async Task ReleaseAsync(string id)
    {
        if (_leases.TryRemove(id, out var lease)) await ReleaseAllAsync(lease.Shards);
    }

    private async Task SweepAsync()
    {
        var now = Environment.TickCount64;
        foreach (var (id, lease) in _leases)
            if (now - Volatile.Read(ref lease.LastUsed) > _keepAlive.TotalMilliseconds)
                await ReleaseAsync(id);
    }

    private static async Task ReleaseAllAsync(IEnumerable<HeldShard> shards)
    {
        // A closed index (shard moved away, index deleted) released its searchers with it.
        foreach (var s in shards)
        {
            s.Worker.SnapshotHeld(-1);
            try { s.Index.ReleaseSnapshot(s.Snapshot); }
            catch (IndexEngineException) { }
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _sweep.DisposeAsync();
        foreach (var id in _leases.Keys) await ReleaseAsync(id);
    }
}
