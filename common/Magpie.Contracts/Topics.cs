namespace Magpie.Contracts;

/// <summary>Kafka topic and header names every stage agrees on.</summary>
public static class Topics
{
    public const string Documents = "magpie.documents";
    public const string DocumentsDeadLetter = "magpie.documents.dlq";
    public const string Changes = "magpie.changes";

    /// <summary>Index definitions (key = index name, null value = deleted), compacted; every indexer and query process reads it.</summary>
    public const string Indexes = "magpie.indexes";

    /// <summary>
    /// Read your writes through Kafka: per input partition of <see cref="Documents"/> (the key), the offset the ingest has applied,
    /// the etag it got, and the <see cref="Changes"/> offsets that hold it; compacted, read by query processes.
    /// </summary>
    public const string InputProgress = "magpie.input-progress";

    /// <summary>
    /// Subscriptions' shared state (key = subscription name; definition, acknowledged position, lease, batch handed out), compacted;
    /// every query process reads it, so any of them serves any subscription.
    /// </summary>
    public const string Subscriptions = "magpie.subscriptions";

    /// <summary>
    /// The vectors indexers' embedding caches keep (key = the cache's id and the text's key, value = float32s), compacted; every
    /// indexer reads it from the beginning, so none embeds a text another already did.
    /// </summary>
    public const string Embeddings = "magpie.embeddings";

    public static class Headers
    {
        public const string Op = "magpie-op";
        public const string Collection = "magpie-collection";
        public const string IfMatch = "magpie-if-match";
        public const string DeadLetterReason = "magpie-dlq-reason";
        public const string DeadLetterTopic = "magpie-dlq-topic";
        public const string DeadLetterPartition = "magpie-dlq-partition";
        public const string DeadLetterOffset = "magpie-dlq-offset";
    }
}
