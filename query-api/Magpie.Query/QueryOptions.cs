namespace Magpie.Query;

/// <summary>Where queries find their shards: this process's indexer (embedded), or the indexer consumer group through Kafka.</summary>
public sealed record QueryOptions
{
    /// <summary>Where subscriptions keep their positions.</summary>
    public required string DataDir { get; init; }

    /// <summary>Kafka bootstrap servers; null = embedded (the indexer in this process holds every shard).</summary>
    public string? Kafka { get; init; }

    /// <summary>The indexer processes' consumer group: its members own the shards (Kafka mode).</summary>
    public string IndexerGroup { get; init; } = "magpie-indexer";

    /// <summary>Kafka mode: where an ingest process answers (update and delete by query write through it); null: none known.</summary>
    public string? IngestUrl { get; init; }

    /// <summary>HTTP clients for asking indexer processes (with the deployment's service key and certificate trust).</summary>
    public Func<TimeSpan, HttpClient> PeerClient { get; init; } = timeout => new HttpClient { Timeout = timeout };
}
