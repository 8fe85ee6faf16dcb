namespace Magpie.Embeddings.Caching;

/// <summary>
/// Where the vectors one process's caches keep reach every other's (Kafka mode: a compacted topic), so an indexer that starts
/// with an empty disk, or takes over another's shards, asks the model for none of the texts already embedded anywhere.
/// </summary>
public interface IEmbeddingCacheShare
{
    /// <summary>Passes on a vector the cache <paramref name="cacheId"/> kept under <paramref name="key"/> (its text's key).</summary>
    void Publish(string cacheId, UInt128 key, float[] vector);

    /// <summary>Completes once what was shared before this process started is kept here too (or the share stopped waiting for it).</summary>
    Task Restored { get; }
}
