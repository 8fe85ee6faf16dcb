using Magpie.Scripting;

namespace Magpie.Indexer;

public sealed class IndexerOptions
{
    public required string DataDir { get; init; }
    public ScriptLimits ScriptLimits { get; init; } = ScriptLimits.Default;

    /// <summary>Changes per Lucene writer batch (one commit each).</summary>
    public int BatchSize { get; init; } = 4096;

    /// <summary>What the engine may keep for facets (columns of value ordinals, range document sets), over all indexes.</summary>
    public int FacetCacheMegabytes { get; init; } = 256;

    /// <summary>Kafka bootstrap servers when the indexer runs as its own process (Kafka mode); null = embedded.</summary>
    public string? Kafka { get; init; }

    /// <summary>Kafka mode: the consumer group indexer processes share; each owns some partitions of magpie.changes.</summary>
    public string IndexerGroup { get; init; } = "magpie-indexer";

    /// <summary>Kafka mode: the address query processes reach this indexer at (its client id in the group).</summary>
    public string AdvertisedUrl { get; init; } = "http://localhost:8080";
    public int KafkaPartitions { get; init; } = 6;
    public short KafkaReplicationFactor { get; init; } = 1;

    /// <summary>Keep documents in the index (Kafka mode: there is no document store beside the indexer).</summary>
    public bool StoreSource => Kafka is not null;
}
