using Magpie.Contracts.Search;

namespace Magpie.Indexer.Engine;

/// <summary>
/// The search engine beneath every index (RavenDB's IndexPersistenceBase): opens an index's folder. The worker, the
/// map/reduce stages and shard searches speak only <see cref="IIndexPersistence"/>; Lucene.Net is one implementation
/// (<see cref="Lucene.LuceneEngine"/>).
/// </summary>
public interface IIndexEngine : IDisposable
{
    /// <summary>Names the engine and its on-disk format; an index folder written by another engine is rebuilt.</summary>
    string Name { get; }

    /// <summary>Opens (or creates) the index in <paramref name="directory"/>; a folder another engine wrote is emptied first.</summary>
    IIndexPersistence Open(string directory);
}

/// <summary>
/// One open index. Writes are visible to searches after <see cref="RefreshAsync"/>, durable after <see cref="CommitAsync"/>,
/// whose user data records the position the index has consumed. Writes come from one caller at a time (the index's
/// worker); searches, facets, snapshots (<see cref="IShardSearcher"/>) and stats from any thread, concurrently with them.
/// </summary>
public interface IIndexPersistence : IShardSearcher
{
    /// <summary>The state of the last commit when the index was opened.</summary>
    IndexState Opened { get; }

    /// <summary>
    /// Deletes every entry of <paramref name="deletes"/>, then replaces each document's entries (not visible before a refresh).
    /// A document the engine refuses (a term over its limit that no earlier check caught) is left out and returned with the
    /// reason: it fails alone, and the index goes on.
    /// </summary>
    Task<IReadOnlyList<RefusedDocument>> WriteAsync(IReadOnlyCollection<string> deletes, IReadOnlyList<IndexedDocument> documents, CancellationToken ct = default);

    /// <summary>Makes everything written so far durable, with <paramref name="commitData"/> as the commit's user data.</summary>
    Task CommitAsync(IReadOnlyDictionary<string, string> commitData, CancellationToken ct = default);

    /// <summary>Opens a new near-real-time searcher if anything changed.</summary>
    Task RefreshAsync(CancellationToken ct = default);

    Task DeleteAllAsync(CancellationToken ct = default);

    Task<IndexState> StateAsync(CancellationToken ct = default);

    /// <summary>Every state entry (<see cref="StateEntry"/>) as of now, from one snapshot: what a map/reduce index reloads when it starts.</summary>
    IEnumerable<StateEntry> ScanState();

    /// <summary>
    /// Every entry holding the stored field <paramref name="field"/> as of now, from one snapshot: its document id and the value
    /// (what a map that loads reloads when it starts: each document's loaded ids, kept on its first entry).
    /// </summary>
    IEnumerable<(string Id, string Value)> ScanStored(string field);

    /// <summary>Closes the index (what was not committed is lost); held snapshots go with it.</summary>
    void Close();
}

/// <summary>
/// Commit user data (how far the index consumed its source), the live entry count, the facet cache's and the id filter's figures.
/// </summary>
public sealed record IndexState(IReadOnlyDictionary<string, string> CommitData, long Entries, FacetCacheStats FacetCache, KnownIdsStats KnownIds)
{
    /// <summary>The index's nearest-neighbour graphs: built (and the vectors they hold), and waiting to be built.</summary>
    public VectorGraphStats VectorGraphs { get; init; } = new(0, 0, 0);
}

public sealed record VectorGraphStats(int Built, int Pending, long Vectors);

/// <summary>
/// The index's filter of the ids it holds (what lets a new id be added without a lookup): its memory, whether it is still being
/// filled from the index (every write an update meanwhile), and whether it outgrew its bound (every write an update from then on).
/// </summary>
public sealed record KnownIdsStats(long Bytes, bool Filling, bool Full);

/// <summary>The engine's facet column cache: this index's share, and the engine's total against its budget.</summary>
public sealed record FacetCacheStats(long IndexBytes, long IndexEntries, long TotalBytes, long BudgetBytes, long TotalEntries, long Hits, long Misses, long Evictions);

/// <summary>A document the engine would not take, and why (that document's error in the index's status).</summary>
public sealed record RefusedDocument(string Id, string Reason);
