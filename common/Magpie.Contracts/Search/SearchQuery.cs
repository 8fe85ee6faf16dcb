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

/// <summary>The text analyzed like a full-text field; any term matches, more matches score higher.</summary>
public sealed record FullTextQuery(string Field, string Text) : SearchQuery;

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

public enum SortKind : byte { Score, String, Long, Double }

/// <summary>
/// One sort key; the document id is always appended as the last one, so order and cursors are stable. A field with
/// several values sorts by its smallest ascending and its largest descending (as Elasticsearch does).
/// </summary>
public sealed record SortField(SortKind Kind, string Field, bool Descending = false)
{
    public static SortField Score { get; } = new(SortKind.Score, "", Descending: true);
}

/// <summary>
/// What a query asks of one index. <see cref="After"/> (a cursor from a previous page) replaces <see cref="Skip"/>; <see cref="StoredFields"/>
/// null = all stored fields; <see cref="Snapshot"/> (a held point in time) searches that point in time, 0 = now.
/// </summary>
public sealed record SearchRequest(SearchQuery Query, IReadOnlyList<SortField> Sort, int PageSize, int Skip = 0, SearchCursor? After = null,
    IReadOnlyList<string>? StoredFields = null, long Snapshot = 0);

/// <summary>One hit: the source document's id, its score (0 unless sorted by score), its stored values (string, long, double, or
/// <c>byte[]</c>: JSON kept as UTF-8), its cursor.</summary>
public sealed record SearchHit(string Id, float Score, IReadOnlyDictionary<string, IReadOnlyList<object>> Stored, SearchCursor Cursor);

/// <summary>The exact number of matching entries and one page of them.</summary>
public sealed record SearchPage(long TotalHits, IReadOnlyList<SearchHit> Hits);
