using Magpie.Kafka.Documents;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Partitions;

/// <summary>
/// The partitions of a partitioned store this process holds, as the ingest consumer group assigns them
/// (<see cref="PartitionedTopicConsumer"/> opens and releases them). A request works on a partition through a
/// <see cref="PartitionLease"/>: releasing a partition first stops new leases, waits for the ones out to end, then waits until
/// Kafka holds every change written, so the next owner, which rebuilds the partition from the topic, starts from all of them.
/// </summary>
public sealed class StorePartitions(IngestOptions options, ILoggerFactory loggers) : IAsyncDisposable
{
    private readonly Lock _lock = new();
    private readonly Dictionary<int, Entry> _entries = [];
    private readonly ILogger _log = loggers.CreateLogger("Magpie.Partitions");

    public int Count => options.KafkaPartitions;

    public int PartitionOf(string id) => DocumentPartitioner.PartitionOf(id, Count);

    /// <summary>The partitions this process serves now.</summary>
    public IReadOnlyList<StorePartition> Serving
    {
        get { lock (_lock) return [.. _entries.Values.Where(e => e is { Open: not null, Releasing: false }).Select(e => e.Open!).OrderBy(p => p.Number)]; }
    }

    /// <summary>A lease on a partition this process serves; waits for one being opened (up to <paramref name="wait"/>); null: not here.</summary>
    public async Task<PartitionLease?> EnterAsync(int partition, TimeSpan wait, CancellationToken ct)
    {
        Task<StorePartition?> ready;
        lock (_lock)
        {
            if (!_entries.TryGetValue(partition, out var entry) || entry.Releasing) return null;
            if (entry.Open is { } open) return Lease(entry, open);
            ready = entry.Ready.Task;
        }
        try { await ready.WaitAsync(wait, ct); }
        catch (TimeoutException) { return null; }
        lock (_lock) return _entries.TryGetValue(partition, out var entry) && entry is { Open: { } open, Releasing: false } ? Lease(entry, open) : null;
    }

    private PartitionLease Lease(Entry entry, StorePartition open)
    {
        entry.Active++;
        return new PartitionLease(open, () =>
        {
            lock (_lock) if (--entry.Active == 0 && entry.Releasing) entry.Idle.TrySetResult();
        });
    }

    /// <summary>Opens a partition this process was assigned (rebuilding it from the topic when another process wrote it since).</summary>
    public async Task AcquireAsync(int partition, CancellationToken ct)
    {
        Entry entry;
        lock (_lock)
        {
            if (_entries.ContainsKey(partition)) return;
            _entries[partition] = entry = new Entry();
        }
        try
        {
            entry.Open = await StorePartition.OpenAsync(partition, options, loggers, ct);
            entry.Ready.TrySetResult(entry.Open);
        }
        catch
        {
            lock (_lock) _entries.Remove(partition);
            entry.Ready.TrySetResult(null);
            throw;
        }
    }

    /// <summary>Gives a partition up: no new writes, the ones under way finish, Kafka gets every change (bounded), the store closes.</summary>
    public async Task ReleaseAsync(int partition, TimeSpan drain)
    {
        Entry? entry;
        lock (_lock)
        {
            if (!_entries.TryGetValue(partition, out entry)) return;
            entry.Releasing = true;
            if (entry.Active == 0) entry.Idle.TrySetResult();
        }
        var open = await entry.Ready.Task;
        try
        {
            if (open is null) return;
            if (!await entry.Idle.Task.WaitAsync(drain).ContinueWith(t => t.IsCompletedSuccessfully))
                _log.LogWarning("store partition {Partition}: requests still under way after {Seconds} s; closing it anyway", partition, drain.TotalSeconds);
            if (!await open.DrainAsync(drain, CancellationToken.None))
                _log.LogWarning("store partition {Partition}: Kafka has not confirmed every change after {Seconds} s; the next owner starts without the rest, which stays in this store", partition, drain.TotalSeconds);
            await open.DisposeAsync();
            _log.LogInformation("store partition {Partition} released", partition);
        }
        finally
        {
            lock (_lock) _entries.Remove(partition);
        }
    }

    public async ValueTask DisposeAsync()
    {
        List<int> held;
        lock (_lock) held = [.. _entries.Keys];
        foreach (var p in held) await ReleaseAsync(p, TimeSpan.FromSeconds(5));
    }

    private sealed class Entry
    {
        public StorePartition? Open;
        public bool Releasing;
        public int Active;
        public readonly TaskCompletionSource<StorePartition?> Ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
        public readonly TaskCompletionSource Idle = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}

/// <summary>A request's hold on a partition it works on; the partition is not handed on while one is out.</summary>
public sealed class PartitionLease(StorePartition partition, Action release) : IDisposable
{
    private int _released;

    public StorePartition Partition => partition;

    public void Dispose()
    {
        if (Interlocked.Exchange(ref _released, 1) == 0) release();
    }
}
