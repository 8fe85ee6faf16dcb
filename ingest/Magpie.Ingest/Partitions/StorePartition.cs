using System.Diagnostics;
using System.Globalization;
using System.Text;
using Magpie.Contracts;
using Magpie.Contracts.Changes;
using Magpie.Ingest.Changes;
using Magpie.Ingest.Documents;
using Magpie.Ingest.Kafka;
using Magpie.Kafka.Changes;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Partitions;

/// <summary>
/// One partition of a partitioned store, owned by this process: its FASTER store (<c>{DataDir}/partitions/{p}</c>, its own
/// etags), the feed over its log, compaction, and the relay that publishes it to the same partition of <c>magpie.changes</c>.
/// Opening it makes it current with the topic first: the store kept from an earlier ownership is used as it is when nobody
/// wrote the partition since (the topic ends where this store's relay last confirmed); otherwise it is rebuilt from the
/// compacted topic, which holds every acknowledged write's latest version with its etag.
/// </summary>
public sealed class StorePartition : IAsyncDisposable
{
    private readonly CancellationTokenSource _stop = new();

    private StorePartition(int number, DocumentStore store, ChangeRelay relay, ChangeLogCompactor? compactor, PartitionTakeover takeover, int maxJsonDepth)
    {
        (Number, Store, Relay, Compactor, Takeover) = (number, store, relay, compactor, takeover);
        Messages = new StoreMessageWriter(store, maxJsonDepth);
    }

    /// <summary>Queue sinks' messages whose writes are this partition's documents (its own ledger).</summary>
    public Contracts.Documents.IMessageWriter Messages { get; }

    public int Number { get; }

    public DocumentStore Store { get; }

    /// <summary>The relay of this partition's changes (what a write waits on before its acknowledgement).</summary>
    public ChangeRelay Relay { get; }

    /// <summary>How this process came to hold the partition: kept, or rebuilt from the topic (and how long that took).</summary>
    public PartitionTakeover Takeover { get; }

    public ChangeLogCompactor? Compactor { get; }

    public static string DirectoryOf(IngestOptions options, int partition) =>
        Path.Combine(options.DataDir, "partitions", partition.ToString(CultureInfo.InvariantCulture));

    /// <summary>
    /// The options of one partition: its own folder, and its share of the memory one store would take (a process may hold every
    /// partition; allocating a whole store's id index for each also cost a takeover seconds).
    /// </summary>
    public static IngestOptions OptionsOf(IngestOptions options, int partition) => options with
    {
        DataDir = DirectoryOf(options, partition),
        LogMemoryBytes = Math.Max(64L << 20, options.LogMemoryBytes / Math.Max(1, options.KafkaPartitions)),
        IndexBytes = Share(options.IndexBytes, options.KafkaPartitions, 1L << 22),
        IndexMemoryBytes = Share(options.IndexMemoryBytes, options.KafkaPartitions, 1L << 24),
    };

    /// <summary>A power of two near <paramref name="whole"/> / <paramref name="parts"/>, at least <paramref name="floor"/>.</summary>
    private static long Share(long whole, int parts, long floor) =>
        Math.Max(floor, (long)System.Numerics.BitOperations.RoundUpToPowerOf2((ulong)Math.Max(1, whole / Math.Max(1, parts))));

    public static async Task<StorePartition> OpenAsync(int partition, IngestOptions options, ILoggerFactory loggers, CancellationToken ct)
    {
        var own = OptionsOf(options, partition);
        var log = loggers.CreateLogger("Magpie.Partitions");
        var watch = Stopwatch.StartNew();
        var position = new RelayPosition(Path.Combine(own.DataDir, "relay"));
        var end = (await new KafkaChangeFeed(options.KafkaBootstrapServers!, Topics.Changes, partition).EndAsync(ct))?.After.Next
            .GetValueOrDefault(partition.ToString(CultureInfo.InvariantCulture)) ?? 0;
        var kept = Directory.Exists(own.Store.Directory) && (position.Load()?.End ?? 0) == end;
        if (!kept && Directory.Exists(own.DataDir)) Directory.Delete(own.DataDir, recursive: true);
        var store = await DocumentStore.OpenAsync(own.Store, loggers.CreateLogger("Magpie.Documents"));
        try
        {
            long restored = 0;
            if (!kept)
            {
                restored = await RestoreAsync(store, options.KafkaBootstrapServers!, partition, end, ct);
                // Everything in the log now is on the topic already: the relay starts after it.
                position.Save(store.LogTailAddress, store.LastEtag, end);
            }
            var takeover = new PartitionTakeover(kept, restored, watch.Elapsed);
            log.LogInformation("store partition {Partition} {How} in {Ms} ms (last etag {Etag})", partition,
                kept ? "kept from before" : $"rebuilt from {Topics.Changes} ({restored} changes)", (long)watch.Elapsed.TotalMilliseconds, store.LastEtag);
            var readers = new ChangeLogReaders();
            var tail = new ChangeLogTail(store);
            var relay = new ChangeRelay(tail, readers, own, loggers.CreateLogger<ChangeRelay>(), partition);
            var compactor = options.Compaction is { } compaction ? new ChangeLogCompactor(store, readers, compaction, loggers.CreateLogger<ChangeLogCompactor>()) : null;
            var opened = new StorePartition(partition, store, relay, compactor, takeover, options.MaxJsonDepth);
            await relay.StartAsync(opened._stop.Token);
            if (compactor is not null) await compactor.StartAsync(opened._stop.Token);
            return opened;
        }
        catch
        {
            await store.DisposeAsync();
            throw;
        }
    }

    /// <summary>Reads the partition of the change topic from its beginning up to <paramref name="end"/> into the store.</summary>
    private static async Task<long> RestoreAsync(DocumentStore store, string servers, int partition, long end, CancellationToken ct)
    {
        if (end <= 0) return 0;
        long count = 0;
        var key = partition.ToString(CultureInfo.InvariantCulture);
        await foreach (var batch in new KafkaChangeFeed(servers, Topics.Changes, partition).ReadAsync(ChangeFeedPosition.Beginning, 2_000, ct))
        {
            if (batch.Changes.Count > 0)
            {
                await store.RestoreAsync(batch.Changes.Select(c => new RestoredChange(c.Op, c.Id, c.Collection, c.Etag, c.LastModified,
                    c.Document is { } d ? Encoding.UTF8.GetBytes(d.GetRawText()) : [])).ToList(), ct);
                count += batch.Changes.Count;
            }
            if (batch.After.Next.GetValueOrDefault(key) >= end) break;
        }
        return count;
    }

    /// <summary>
    /// Hands the partition on: waits (bounded) until Kafka holds every change written, so the next owner restores them, then
    /// stops the relay and closes the store. Writes must have stopped before (<see cref="StorePartitions"/> does that).
    /// </summary>
    public async Task<bool> DrainAsync(TimeSpan timeout, CancellationToken ct) => await Relay.DrainAsync(timeout, ct);

    public async ValueTask DisposeAsync()
    {
        _stop.Cancel();
        await Relay.StopAsync(CancellationToken.None);
        if (Compactor is not null) await Compactor.StopAsync(CancellationToken.None);
        Relay.Dispose();
        Compactor?.Dispose();
        await Store.DisposeAsync();
        _stop.Dispose();
    }
}

/// <summary>How a partition came to this process: <see cref="Kept"/> its store from before, else rebuilt from <see cref="Restored"/> changes.</summary>
public sealed record PartitionTakeover(bool Kept, long Restored, TimeSpan Took);
