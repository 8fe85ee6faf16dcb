using System.Text.Json;

namespace Magpie.Query.Shards;

/// <summary>
/// What the query coordinator asks of one shard owner (a process holding some shards of an index): the
/// top <see cref="Take"/> hits of its shards after <see cref="After"/>, results resolved (documents or
/// projections), each with its cursor so the coordinator can merge owners' pages.
/// </summary>
public sealed record ShardQuery
{
    public required string Query { get; init; }

    /// <summary>The index to search: the query's <c>from index</c>, or the automatic index a <c>from Collection</c> query runs on.</summary>
    public required string Index { get; init; }

    /// <summary>
    /// The version of the index to search (its definition's fingerprint): every owner answers from the same one, so a query never
    /// mixes versions across shards while a side-by-side rebuild switches. Null: the version the owner serves.
    /// </summary>
    public string? Version { get; init; }
    public Dictionary<string, JsonElement>? Parameters { get; init; }
    public int Take { get; init; }

    /// <summary>Hits to skip first; only the coordinator of a single owner sets it (several owners merge, then skip).</summary>
    public int Skip { get; init; }
    public string? After { get; init; }

    /// <summary>Kafka mode: the partitions this owner holds according to the consumer group; null = every local shard.</summary>
    public IReadOnlyList<int>? Partitions { get; init; }

    /// <summary>Kafka mode: the end offsets of magpie.changes when the query started; a shard short of them is stale.</summary>
    public Dictionary<string, long>? Target { get; init; }
    public bool WaitForNonStale { get; init; }
    public int TimeoutMs { get; init; }

    /// <summary>
    /// Sort types already decided: these fields sort numerically, the others as strings (a stream's later pages,
    /// owners that disagreed asked again); null = the owner probes its shards.
    /// </summary>
    public IReadOnlyList<string>? NumericSorts { get; init; }

    /// <summary>A stream's first page: hold the shards' searchers (a point in time) and say which lease in <see cref="ShardPage.Snapshot"/>.</summary>
    public bool HoldSnapshot { get; init; }

    /// <summary>A stream's later page: search the point in time this owner's lease holds (no staleness wait, no new shards).</summary>
    public string? Snapshot { get; init; }

    /// <summary>Only the hits' scores, best first (<see cref="Rql.RqlQuery.ScoresOnly"/>): how the coordinator finds a sharded vector.search's k-th similarity.</summary>
    public bool ScoresOnly { get; init; }

    /// <summary>
    /// Not a search: the vectors the index holds in this field for the document <c>Parameters["id"]</c>, each hit's result one
    /// (a JSON array of numbers): how the coordinator reads <c>embedding.forDoc</c>'s vector from whichever shard holds it.
    /// </summary>
    public string? VectorsOf { get; init; }

    /// <summary>A hybrid query's ranking to answer instead of the fused one (0: the text, 1: the vector; <see cref="Rql.RqlQuery.Retriever"/>).</summary>
    public int? HybridRetriever { get; init; }

    /// <summary>The request body's facets, as the client sent them (the owner parses them as the coordinator did).</summary>
    public List<JsonElement>? Facets { get; init; }
    public bool FacetsOnly { get; init; }

    /// <summary>The seed of a <c>random()</c> the query gives none: drawn once by the coordinator, the same for every owner and page.</summary>
    public string? RandomSeed { get; init; }
}

/// <summary>One result and its cursor; <see cref="Includes"/>: the ids of the documents it includes (<c>include</c>).</summary>
public sealed record ShardHit(JsonElement Result, string Cursor)
{
    public IReadOnlyList<string>? Includes { get; init; }

    /// <summary>The hit's document id (with explanations or highlights) and the engine's explanation of its score (<c>include explanations()</c>).</summary>
    public string? Id { get; init; }
    public string? Explanation { get; init; }

    /// <summary>Each highlighted field's fragments (<c>include highlight(…)</c>; fields the hit's text did not match left out).</summary>
    public Dictionary<string, IReadOnlyList<string>>? Highlights { get; init; }
}

/// <summary>
/// An owner's answer: its total, its top hits, whether any of its shards was stale, how sort fields were typed, the snapshot lease it holds,
/// and the query's facets counted over its shards (every value, for the coordinator to add up).
/// </summary>
public sealed record ShardPage(long TotalResults, IReadOnlyList<ShardHit> Hits, bool IsStale, long IndexEtag, IReadOnlyList<string> NumericSorts,
    string? Snapshot = null, IReadOnlyList<IReadOnlyList<Magpie.Contracts.Search.FacetBucket>>? Facets = null)
{
    /// <summary>The documents the hits include, by id (null: the query includes nothing).</summary>
    public Dictionary<string, JsonElement>? Included { get; init; }

    /// <summary>The candidates of each <c>suggest()</c> over this owner's shards (null: the query suggests nothing).</summary>
    public IReadOnlyList<Rql.SuggestAnswer>? Suggestions { get; init; }

    /// <summary>How many of the hits needed their document (0: the results came from the values the index stores).</summary>
    public long DocumentsRead { get; init; }

    /// <summary>Milliseconds of each stage on this owner (<c>include timings()</c>): plan, search, results (loads and projections).</summary>
    public Dictionary<string, double>? Timings { get; init; }
}

/// <summary>A process holding shards of indexes: this one (<see cref="LocalShardOwner"/>) or another over HTTP (<see cref="RemoteShardOwner"/>).</summary>
public interface IShardOwner
{
    string Name { get; }

    Task<ShardPage> SearchAsync(ShardQuery query, CancellationToken ct);

    /// <summary>Lets go of a snapshot a stream held (<see cref="ShardQuery.HoldSnapshot"/>); never throws.</summary>
    Task ReleaseAsync(string snapshot);
}

/// <summary>Who holds the shards right now, whether together they hold all of them, and (Kafka) the feed's end offsets.</summary>
public sealed record ShardLayout(IReadOnlyList<(IShardOwner Owner, IReadOnlyList<int>? Partitions)> Owners, bool Complete, Dictionary<string, long>? Target);

/// <summary>Finds the shard owners for a query: the local indexer (embedded) or the indexer consumer group's members (Kafka).</summary>
public interface IShardDirectory
{
    Task<ShardLayout> LayoutAsync(CancellationToken ct);
}
