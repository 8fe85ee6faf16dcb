namespace Magpie.Contracts.Search;

/// <summary>
/// A query over one index's entries, as the query side plans it and a search engine runs it (the engine translates
/// it into its own queries; nothing here knows Lucene).
/// </summary>
public abstract record SearchQuery
{
    public static SearchQuery All { get; } = new MatchAll();

    private sealed record MatchAll : SearchQuery;
}

public sealed record TermQuery(string Field, string Value) : SearchQuery;

/// <summary>Inclusive bounds; use long.MinValue / MaxValue for an open end.</summary>
public sealed record LongRangeQuery(string Field, long Lower, long Upper) : SearchQuery;

/// <summary>Inclusive bounds; use infinities for an open end, <see cref="Math.BitIncrement"/> for exclusive ones.</summary>
public sealed record DoubleRangeQuery(string Field, double Lower, double Upper) : SearchQuery;

/// <summary>Terms between two strings in term order; a null bound is open.</summary>
public sealed record TermRangeQuery(string Field, string? Lower, string? Upper, bool IncludeLower, bool IncludeUpper) : SearchQuery;

public sealed record PrefixQuery(string Field, string Prefix) : SearchQuery;

/// <summary>How <see cref="IdQuery"/> compares an entry's id with its value.</summary>
public enum IdMatch { Equal, Prefix, Suffix }

/// <summary>
/// Entries whose id equals, starts or ends with <paramref name="Value"/>, compared case-insensitively as RavenDB compares ids
/// (<c>id() = 'Orders/42'</c> finds <c>orders/42</c>).
/// </summary>
public sealed record IdQuery(string Value, IdMatch Match) : SearchQuery;

/// <summary>
/// RavenDB's <c>search()</c>: the text in its search syntax (words analyzed like the field, <c>"quoted phrases"</c>, <c>espress*</c>,
/// <c>*presso</c>, <c>espreso~</c>, <c>-excluded</c>); any word matches, or every one with <paramref name="AllWords"/>; more matches
/// score higher. With <paramref name="Proximity"/> the words (no operators) must occur within that many positions of each other.
/// </summary>
public sealed record FullTextQuery(string Field, string Text, bool AllWords = false, int? Proximity = null) : SearchQuery;

/// <summary>
/// Terms of the field within some edits of <paramref name="Term"/> (Levenshtein, a transposition counts one): <paramref name="Fuzziness"/>
/// 1 or 2 is the edits; below 1 it is a similarity as Lucene 3 and RavenDB read it (0.6: edits up to 40 % of the term's length, at most 2).
/// </summary>
public sealed record FuzzyQuery(string Field, string Term, float Fuzziness) : SearchQuery;

/// <summary>Terms matching a pattern where <c>*</c> is any run of characters and <c>?</c> one character (a leading <c>*</c> scans the field's terms).</summary>
public sealed record WildcardQuery(string Field, string Pattern) : SearchQuery;

/// <summary>Terms a .NET regular expression finds a match in (unanchored; <c>^…$</c> for the whole term), within the engine's time limit.</summary>
public sealed record RegexQuery(string Field, string Pattern) : SearchQuery;

/// <summary>Lucene's own query syntax, with <paramref name="Field"/> as the default field.</summary>
public sealed record LuceneSyntaxQuery(string Field, string Text) : SearchQuery;

/// <summary>The inner query with its scores multiplied by <paramref name="Factor"/>.</summary>
public sealed record BoostQuery(SearchQuery Inner, float Factor) : SearchQuery;

/// <summary>Entries that have at least one value for the field.</summary>
public sealed record ExistsQuery(string Field) : SearchQuery;

public sealed record TermsQuery(string Field, IReadOnlyList<string> Values) : SearchQuery;

/// <summary>All of <paramref name="Must"/>, at least one of <paramref name="Should"/> (if any), none of <paramref name="MustNot"/>.</summary>
public sealed record BoolQuery(IReadOnlyList<SearchQuery> Must, IReadOnlyList<SearchQuery> Should, IReadOnlyList<SearchQuery> MustNot) : SearchQuery
{
    public static BoolQuery And(params SearchQuery[] q) => new(q, [], []);
    public static BoolQuery Or(params SearchQuery[] q) => new([], q, []);
    public static BoolQuery Not(SearchQuery q) => new([], [], [q]);
}

/// <summary>
/// How a field sorts: <see cref="Alphanumeric"/> compares runs of digits as numbers and the rest as text ignoring case (SKU2 before
/// SKU10, as RavenDB's); <see cref="Random"/> shuffles the entries by <see cref="SortField.Seed"/> (the field is the id).
/// </summary>
public enum SortKind : byte { Score, String, Long, Double, Alphanumeric, Random }

/// <summary>
/// One sort key; the document id is always appended as the last one, so order and cursors are stable. A field with
/// several values sorts by its smallest ascending and its largest descending (as Elasticsearch does).
/// </summary>
public sealed record SortField(SortKind Kind, string Field, bool Descending = false)
{
    public static SortField Score { get; } = new(SortKind.Score, "", Descending: true);

    /// <summary><see cref="SortKind.Random"/>: the same seed gives the same order.</summary>
    public string? Seed { get; init; }
}

/// <summary>
/// What a query asks of one index. <see cref="After"/> (a cursor from a previous page) replaces <see cref="Skip"/>; <see cref="StoredFields"/>
/// null = all stored fields; <see cref="Snapshot"/> (a held point in time) searches that point in time, 0 = now.
/// </summary>
public sealed record SearchRequest(SearchQuery Query, IReadOnlyList<SortField> Sort, int PageSize, int Skip = 0, SearchCursor? After = null,
    IReadOnlyList<string>? StoredFields = null, long Snapshot = 0)
{
    /// <summary>Each hit with the engine's explanation of its score (<c>include explanations()</c>).</summary>
    public bool Explain { get; init; }
}

/// <summary>One hit: the source document's id, its score (0 unless sorted by score), its stored values (string, long, double, or
/// <c>byte[]</c>: JSON kept as UTF-8), its cursor.</summary>
public sealed record SearchHit(string Id, float Score, IReadOnlyDictionary<string, IReadOnlyList<object>> Stored, SearchCursor Cursor)
{
    /// <summary>How the engine scored the hit, when the request asked (<see cref="SearchRequest.Explain"/>).</summary>
    public string? Explanation { get; init; }
}

/// <summary>The exact number of matching entries and one page of them.</summary>
public sealed record SearchPage(long TotalHits, IReadOnlyList<SearchHit> Hits);

/// <summary>
/// Runs one document at a time through an index definition's maps and a planned query, with the mapping, analyzer and
/// query engine the index itself uses — so a condition means the same on a changed document (a subscription) as in the index.
/// </summary>
public interface IDocumentFilters
{
    /// <exception cref="IndexEngineException">The query is one the engine refuses (as it would refuse it on the index).</exception>
    IDocumentFilter Create(Indexes.IndexDefinition definition, SearchQuery query);
}

public interface IDocumentFilter
{
    /// <summary>Whether the document's entries (what the maps make of it) match; a document the maps refuse matches nothing.</summary>
    bool Matches(Changes.ChangeEvent change);
}

/// <summary>
/// RavenDB's <c>moreLikeThis</c>: entries like a document, whose text per field is <see cref="Texts"/> — its most telling words
/// (frequent in it, rare in the index: Lucene's <c>MoreLikeThis</c>) searched on the same field, scored.
/// </summary>
public sealed record MoreLikeThisQuery(IReadOnlyDictionary<string, IReadOnlyList<string>> Texts, MoreLikeThisOptions Options) : SearchQuery;

/// <summary>What makes a word telling (RavenDB's <c>MoreLikeThisOptions</c>, Lucene's defaults).</summary>
public sealed record MoreLikeThisOptions
{
    public const int MaxTerms = 1_024;

    /// <summary>Times a word must occur in the document.</summary>
    public int MinimumTermFrequency { get; init; } = 2;

    /// <summary>Entries of the index a word must occur in.</summary>
    public int MinimumDocumentFrequency { get; init; } = 5;

    /// <summary>Entries a word may occur in at most (more: too common to tell anything).</summary>
    public int MaximumDocumentFrequency { get; init; } = int.MaxValue;

    /// <summary>Words searched per field, the most telling first.</summary>
    public int MaximumQueryTerms { get; init; } = 25;

    public int MinimumWordLength { get; init; }

    /// <summary>0: no limit.</summary>
    public int MaximumWordLength { get; init; }

    /// <summary>Words read from each field's text.</summary>
    public int MaximumNumberOfTokensParsed { get; init; } = 5_000;

    /// <summary>Each word's clause boosted by how telling it is (scaled by <see cref="BoostFactor"/>).</summary>
    public bool Boost { get; init; }

    public float BoostFactor { get; init; } = 1;
}

/// <summary>How close two vectors are: cosine, the dot product, or 1 / (1 + Euclidean distance²) — always higher for closer.</summary>
public enum VectorSimilarity { Cosine, DotProduct, Euclidean }

/// <summary>
/// RavenDB's <c>vector.search</c>: the <see cref="K"/> entries whose <see cref="Field"/> vector is most similar to
/// <see cref="Vector"/> (at least <see cref="MinimumSimilarity"/>), among the entries <see cref="Filter"/> matches; scored by the
/// similarity. <see cref="Indexes.VectorQuantization.Int8"/>: compared through the field's int8 copies (approximate);
/// <see cref="Indexes.VectorQuantization.Binary"/>: through their bits, scored as RavenDB scores binary vectors (1 − differing bits / bits).
/// Cosine searches of float32 and int8 walk a nearest-neighbour graph where a segment has one (approximate); <see cref="Exact"/>
/// compares every vector.
/// </summary>
public sealed record VectorSearchQuery(string Field, float[] Vector, float MinimumSimilarity, int K, VectorSimilarity Similarity, Indexes.VectorQuantization Quantization, SearchQuery Filter) : SearchQuery
{
    public const int MaxK = 1_024;

    /// <summary><c>exact(vector.search(…))</c>: every vector compared, never the graph.</summary>
    public bool Exact { get; init; }

    /// <summary>
    /// Who made <see cref="Vector"/> of the query's text (<c>embedding.text</c>: the model or connection, as <c>Magpie.Embeddings.Embedders</c> names it), or null (numbers
    /// given, a document's vector): a field whose vectors another embedder made is refused rather than compared across models.
    /// </summary>
    public string? Embedder { get; init; }
}

/// <summary>The entries of these ids (an id's every entry), each scored as given: the order a query coordinator decided (a hybrid query's fused ranks).</summary>
public sealed record ScoredIdsQuery(IReadOnlyDictionary<string, float> Scores) : SearchQuery;
