using Magpie.Contracts;
using Magpie.Scripting;

namespace Magpie.Indexer;

public sealed class IndexerOptions
{
    public required string DataDir { get; init; }
    public ScriptLimits ScriptLimits { get; init; } = ScriptLimits.Default;

    /// <summary>
    /// Most changes an index worker reads, maps and writes as one batch (refreshes and commits go by time, not by batch).
    /// Small on purpose: a batch is read and mapped while the one before it is written, so its documents live for two batch
    /// writes. At 4,096 changes that outlived two gen-0 collections and was promoted: building an index from the store ran
    /// 16 background gen-2 collections in 20 s (raw Lucene: 2) and GC pauses took 13 % of the time. At 512 it is 15 % faster
    /// (docs/BENCHMARKS.md, <c>index-phases</c>).
    /// </summary>
    public const int DefaultBatchSize = 512;

    /// <summary>Changes per index batch: <see cref="DefaultBatchSize"/>.</summary>
    public int BatchSize { get; init; } = DefaultBatchSize;

    /// <summary>How long an index's worker waits before trying again after a failure (the feed unreachable, a write failed).</summary>
    public RetryDelays Retry { get; init; } = RetryDelays.Default;

    /// <summary>
    /// How long stopping one index worker (a definition changed, a partition lost) may hold up the others. Workers start and stop
    /// one reconcile at a time, so a worker stuck in a call that never returns (librdkafka#5456) would otherwise keep every index
    /// of the process from starting on the partitions it gains; past this its stop finishes in the background.
    /// </summary>
    public TimeSpan WorkerStopTimeout { get; init; } = TimeSpan.FromSeconds(60);

    /// <summary>
    /// How long a version replaced by its side-by-side rebuild stays open after the switch, for queries already pinned to it (a
    /// query process that has not read the switch yet; a page in flight). Streams holding snapshots of it keep it open until they end.
    /// </summary>
    public TimeSpan ReplacedGrace { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>How often replacements built side by side are checked for having caught up (and then switched to).</summary>
    public TimeSpan ReplacementCheckInterval { get; init; } = TimeSpan.FromMilliseconds(250);

    /// <summary>What the engine may keep for facets (columns of value ordinals, range document sets), over all indexes.</summary>
    public int FacetCacheMegabytes { get; init; } = 256;

    /// <summary>
    /// What the engine's filters of known ids may take, over all indexes and shards (<c>Lucene/KnownIdFilter</c>: 1.25–2.5 bytes per
    /// id); an index whose filter does not fit writes every entry as an update, as it would without one.
    /// </summary>
    public int KnownIdsMegabytes { get; init; } = 512;

    /// <summary>Vectors a segment holds before a nearest-neighbour graph is built for it (Lucene/Vectors/VectorGraphs; 0: never).</summary>
    public int VectorGraphMinimum { get; init; } = Lucene.LuceneEngine.DefaultVectorGraphMinimum;

    /// <summary>Disk the vectors indexing made may take (<c>{DataDir}/embeddings</c>), per model; 0 keeps none.</summary>
    public int EmbeddingCacheMegabytes { get; init; } = 2048;

    /// <summary>Kafka bootstrap servers when the indexer runs as its own process (Kafka mode); null = embedded.</summary>
    public string? Kafka { get; init; }

    /// <summary>Kafka mode: the consumer group indexer processes share; each owns some partitions of magpie.changes.</summary>
    public string IndexerGroup { get; init; } = "magpie-indexer";

    /// <summary>Kafka mode: the address query processes reach this indexer at (its client id in the group).</summary>
    public string AdvertisedUrl { get; init; } = "http://localhost:8080";
    public int KafkaPartitions { get; init; } = 6;
    public short KafkaReplicationFactor { get; init; } = 1;

    /// <summary>
    /// Kafka mode: where an ingest process answers. Maps that <c>load()</c> read documents through it (the indexer has no store);
    /// null: such indexes fail with a status saying so.
    /// </summary>
    public string? IngestUrl { get; init; }

    /// <summary>HTTP clients for other processes (the ingest), with the deployment's service key and certificate trust.</summary>
    public Func<TimeSpan, HttpClient> PeerClient { get; init; } = timeout => new HttpClient { Timeout = timeout };

    /// <summary>Keep documents in the index (Kafka mode: there is no document store beside the indexer).</summary>
    public bool StoreSource => Kafka is not null;
}
