namespace Magpie.Contracts.Search;

/// <summary>The shards of indexes this process's indexer holds, as queries see them (the indexer's registry implements it).</summary>
public interface ILocalShards
{
    /// <summary>
    /// The shards of <paramref name="index"/> running here now (none when it is not, or not yet): those of the version that
    /// serves queries, or with <paramref name="version"/> (a definition's <c>Fingerprint()</c>) those of that version — the
    /// serving one, a replacement still being built beside it, or one just replaced that is kept open for queries already pinned to it.
    /// </summary>
    IReadOnlyList<ILocalShard> Shards(string index, string? version = null);

    /// <summary>
    /// True when <paramref name="version"/> of <paramref name="index"/> was replaced (or deleted) here and is not served
    /// anymore: a query pinned to it asks again with the version that replaced it.
    /// </summary>
    bool Replaced(string index, string version) => false;
}

/// <summary>One shard: its searcher once open, and how far it has indexed its source.</summary>
public interface ILocalShard
{
    /// <summary>The Kafka partition it indexes; -1 embedded (one shard over the whole change log).</summary>
    int Shard { get; }

    /// <summary>The definition this shard's index was built from (a query plans against the version it searches).</summary>
    Indexes.IndexDefinition Definition { get; }

    /// <summary>Null until the shard's index is open.</summary>
    IShardSearcher? Searcher { get; }

    /// <summary>The etag of the last change indexed.</summary>
    long IndexedEtag { get; }

    /// <summary>
    /// Whether the shard is behind: behind <paramref name="target"/> (Kafka mode: the end offsets of magpie.changes a query
    /// started at), else behind the change log's end. With <paramref name="wait"/>, first waits up to <paramref name="timeout"/> to catch up.
    /// </summary>
    Task<bool> IsStaleAsync(IReadOnlyDictionary<string, long>? target, bool wait, TimeSpan timeout, CancellationToken ct);

    /// <summary>Counts the snapshots held on the shard (shown in its status).</summary>
    void SnapshotHeld(int delta);
}
