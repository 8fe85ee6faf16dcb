using Magpie.Contracts;
namespace Magpie.Ingest;

public sealed record IngestOptions
{
    /// <summary>The store's own options: where it lives (<c>{DataDir}/documents</c>) and the limits it keeps.</summary>
    public Documents.DocumentStoreOptions Store => new()
    {
        Directory = Path.Combine(DataDir, "documents"),
        MaxDocumentBytes = MaxDocumentBytes,
        MaxJsonDepth = MaxJsonDepth,
        CheckpointInterval = CheckpointInterval,
        MinFreeDiskBytes = MinFreeDiskBytes,
        LogMemoryBytes = LogMemoryBytes,
        IndexBytes = IndexBytes,
        IndexMemoryBytes = IndexMemoryBytes,
    };

    /// <summary>Root data folder; the store lives in <c>{DataDir}/documents</c>, the relay position in <c>{DataDir}/relay</c>.</summary>
    public required string DataDir { get; init; }

    /// <summary>Kafka bootstrap servers; null = embedded (no input topic, no relay).</summary>
    public string? KafkaBootstrapServers { get; init; }

    public int KafkaPartitions { get; init; } = 6;

    /// <summary>
    /// A partitioned store (Kafka mode): each partition of <c>magpie.documents</c>/<c>magpie.changes</c> has its own store, owned by
    /// one member of the ingest consumer group; a process that dies has its partitions rebuilt from <c>magpie.changes</c> by the
    /// others. False: one store in this process holds every document.
    /// </summary>
    public bool Partitioned { get; init; }

    /// <summary>Where other ingest processes reach this one (a partitioned store forwards requests to a partition's owner).</summary>
    public string AdvertisedUrl { get; init; } = "http://localhost:8080";

    /// <summary>How long a request waits for its partition's owner while the partition moves, before a 503.</summary>
    public TimeSpan RoutingTimeout { get; init; } = TimeSpan.FromSeconds(15);

    /// <summary>
    /// How long a write waits for Kafka to hold its change before it is acknowledged anyway with <c>Magpie-Durability: log</c> (only
    /// this process's log holds it until Kafka returns); zero: acknowledged once the log holds it, as a single store does by default.
    /// </summary>
    public TimeSpan KafkaAckTimeout { get; init; }
    public short KafkaReplicationFactor { get; init; } = 1;
    public string ConsumerGroup { get; init; } = "magpie-ingest";

    /// <summary>
    /// The indexer consumer group to ask after a write with <c>?waitForIndexes=true</c> when the indexers run in
    /// other processes (Kafka mode); null when the indexer runs in this process (it answers itself).
    /// </summary>
    public string? IndexerGroup { get; init; }

    /// <summary>HTTP clients for asking indexer processes (with the deployment's service key and certificate trust).</summary>
    public Func<TimeSpan, HttpClient> PeerClient { get; init; } = timeout => new HttpClient { Timeout = timeout };

    /// <summary>Most input-topic messages applied in one store batch (and one offset commit).</summary>
    public int InputBatchSize { get; init; } = 512;

    /// <summary>Most changes published between two persisted relay positions.</summary>
    public int RelayBatchSize { get; init; } = 5_000;

    /// <summary>
    /// How long a relay batch may go without a single delivery report, while Kafka answers for <c>magpie.changes</c>, before
    /// the relay gives up on its producer and resends from the last confirmed position with a new one.
    /// </summary>
    public TimeSpan RelayStallTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>How long the input consumer and the change relay wait before trying again after a failure.</summary>
    public RetryDelays Retry { get; init; } = RetryDelays.Default;

    public int MaxDocumentBytes { get; init; } = 16 * 1024 * 1024;
    public int MaxJsonDepth { get; init; } = 64;
    public TimeSpan CheckpointInterval { get; init; } = TimeSpan.FromSeconds(60);
    public long MinFreeDiskBytes { get; init; } = 64L << 20;

    /// <summary>
    /// The change log's in-memory part (bytes; grows with the log up to this, then the oldest pages are only on disk). An index
    /// building over a backlog reads behind the writes: past 256 MB of posts behind, reading the log back from disk cost the
    /// embedded pipeline ~10 µs of CPU per post (1M posts: 0.79 of raw Lucene with 256 MB, 0.88 with 1 GB; docs/BENCHMARKS.md).
    /// </summary>
    public long LogMemoryBytes { get; init; } = 1L << 30;

    /// <summary>The id index's hash table (bytes, a power of two): <see cref="Documents.DocumentStoreOptions.IndexBytes"/>.</summary>
    public long IndexBytes { get; init; } = 1L << 26;

    /// <summary>The id index's in-memory log (bytes, a power of two): <see cref="Documents.DocumentStoreOptions.IndexMemoryBytes"/>.</summary>
    public long IndexMemoryBytes { get; init; } = 1L << 28;

    /// <summary>Change-log compaction; null: the log keeps every version.</summary>
    public Changes.CompactionOptions? Compaction { get; init; } = new(new Documents.RevisionRetention(), TimeSpan.FromSeconds(60), 256L << 20);
}
