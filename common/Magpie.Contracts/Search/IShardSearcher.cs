namespace Magpie.Contracts.Search;

/// <summary>
/// What a query reads from one shard of an index: pages, facets, held points in time and field names. The indexer's engine
/// implements it (Lucene.Net beneath); the query side plans and merges over it without knowing which engine answers.
/// </summary>
public interface IShardSearcher
{
    Task<SearchPage> SearchAsync(SearchRequest request, CancellationToken ct = default);

    /// <summary>
    /// Counts <paramref name="facets"/> over the entries <paramref name="query"/> matches, in one pass (at <paramref name="snapshot"/>,
    /// or now when 0). Every value comes back; the caller orders, cuts and merges shards.
    /// </summary>
    Task<FacetCounts> FacetsAsync(SearchQuery query, IReadOnlyList<FacetSpec> facets, long snapshot = 0, CancellationToken ct = default);

    /// <summary>
    /// Holds the current searcher (a point in time) until <see cref="ReleaseSnapshot"/>: searches with its id see exactly what
    /// it saw, while writes, refreshes and merges go on. Each held snapshot keeps its segment files open.
    /// </summary>
    long AcquireSnapshot();

    void ReleaseSnapshot(long snapshot);

    /// <summary>
    /// The fragments of <paramref name="texts"/> (the values of <see cref="HighlightSpec.Field"/> of one hit) where
    /// <paramref name="query"/> matches, best first, HTML-escaped around the marks; empty when it matches none of them. The text is
    /// analyzed as the field is; wildcards, prefixes and fuzzy words match against the text itself, phrases only where whole.
    /// </summary>
    IReadOnlyList<string> Highlight(SearchQuery query, HighlightSpec spec, IReadOnlyList<string> texts);

    /// <summary>The field's terms close to a word (<see cref="SuggestSpec"/>), each with how many entries hold it, at <paramref name="snapshot"/> or now.</summary>
    IReadOnlyList<TermSuggestion> Suggest(SuggestSpec spec, long snapshot = 0);

    /// <summary>Every field name in the index as searched now (with Magpie's suffixes: <c>@num</c>, <c>@ticks</c>, <c>@cs</c>, …).</summary>
    IReadOnlyList<string> FieldNames();

    /// <summary>The vectors the document's entries hold in a vector field, as written (float32), now; empty when it has none here.</summary>
    IReadOnlyList<float[]> VectorsOf(string field, string id);
}

/// <summary>Something the engine refused (a query it can't run, a closed index, a released snapshot), with its reason.</summary>
public sealed class IndexEngineException(string message, Exception? inner = null) : Exception(message, inner);
