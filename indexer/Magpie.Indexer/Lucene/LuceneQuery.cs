namespace Magpie.Indexer.Lucene;

/// <summary>A Lucene query, built in .NET and rebuilt from its description in the Lucene host.</summary>
public abstract record LuceneQuery
{
    internal abstract void Write(FrameWriter w);

    public static LuceneQuery All { get; } = new MatchAll();

    private sealed record MatchAll : LuceneQuery
    {
        internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.QueryAll);
    }
}

public sealed record TermQuery(string Field, string Value) : LuceneQuery
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.QueryTerm).String(Field).String(Value);
}

/// <summary>Inclusive bounds; use long.MinValue / MaxValue for an open end.</summary>
public sealed record LongRangeQuery(string Field, long Lower, long Upper) : LuceneQuery
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.QueryLongRange).String(Field).Long(Lower).Long(Upper);
}

/// <summary>Inclusive bounds; use infinities for an open end, <see cref="Math.BitIncrement"/> for exclusive ones.</summary>
public sealed record DoubleRangeQuery(string Field, double Lower, double Upper) : LuceneQuery
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.QueryDoubleRange).String(Field).Double(Lower).Double(Upper);
}

/// <summary>Terms between two strings in term order; a null bound is open.</summary>
public sealed record TermRangeQuery(string Field, string? Lower, string? Upper, bool IncludeLower, bool IncludeUpper) : LuceneQuery
{
    internal override void Write(FrameWriter w) =>
        w.Byte(LuceneProtocol.QueryTermRange).String(Field).String(Lower).String(Upper).Bool(IncludeLower).Bool(IncludeUpper);
}

public sealed record PrefixQuery(string Field, string Prefix) : LuceneQuery
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.QueryPrefix).String(Field).String(Prefix);
}

/// <summary>The text analyzed like a <see cref="TextField"/>; any term matches, more matches score higher.</summary>
public sealed record FullTextQuery(string Field, string Text) : LuceneQuery
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.QueryFullText).String(Field).String(Text);
}

/// <summary>Entries that have at least one value for the field.</summary>
public sealed record ExistsQuery(string Field) : LuceneQuery
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.QueryExists).String(Field);
}

public sealed record TermsQuery(string Field, IReadOnlyList<string> Values) : LuceneQuery
{
    internal override void Write(FrameWriter w)
    {
        w.Byte(LuceneProtocol.QueryTerms).String(Field).Int(Values.Count);
        foreach (var v in Values) w.String(v);
    }
}

/// <summary>All of <paramref name="Must"/>, at least one of <paramref name="Should"/> (if any), none of <paramref name="MustNot"/>.</summary>
public sealed record BoolQuery(IReadOnlyList<LuceneQuery> Must, IReadOnlyList<LuceneQuery> Should, IReadOnlyList<LuceneQuery> MustNot) : LuceneQuery
{
    public static BoolQuery And(params LuceneQuery[] q) => new(q, [], []);
    public static BoolQuery Or(params LuceneQuery[] q) => new([], q, []);
    public static BoolQuery Not(LuceneQuery q) => new([], [], [q]);

    internal override void Write(FrameWriter w)
    {
        w.Byte(LuceneProtocol.QueryBool);
        foreach (var list in new[] { Must, Should, MustNot })
        {
            w.Int(list.Count);
            foreach (var q in list) q.Write(w);
        }
    }
}

public enum SortKind : byte { Score = LuceneProtocol.SortScore, String = LuceneProtocol.SortString, Long = LuceneProtocol.SortLong, Double = LuceneProtocol.SortDouble }

/// <summary>One sort key; the document id is always appended as the last one, so order and cursors are stable.</summary>
public sealed record SortField(SortKind Kind, string Field, bool Descending = false)
{
    public static SortField Score { get; } = new(SortKind.Score, "", Descending: true);
}
