namespace Magpie.Indexer.Lucene;

/// <summary>
/// One facet to count over a query's matching entries: the values of some fields (<see cref="TermFacetSpec"/>) or
/// a list of ranges (<see cref="RangeFacetSpec"/>), with totals of numeric <see cref="AggregateFields"/> per value.
/// </summary>
public abstract record FacetSpec(IReadOnlyList<string> AggregateFields)
{
    internal abstract void Write(FrameWriter w);

    private protected static void Strings(FrameWriter w, IReadOnlyList<string> values)
    {
        w.Int(values.Count);
        foreach (var v in values) w.String(v);
    }
}

/// <summary>Counts per value of <paramref name="StringFields"/> (doc-values terms) and <paramref name="NumberFields"/> (numbers).</summary>
public sealed record TermFacetSpec(IReadOnlyList<string> StringFields, IReadOnlyList<string> NumberFields, IReadOnlyList<string> AggregateFields)
    : FacetSpec(AggregateFields)
{
    internal override void Write(FrameWriter w)
    {
        w.Byte(0);
        Strings(w, StringFields);
        Strings(w, NumberFields);
        Strings(w, AggregateFields);
    }
}

/// <summary>Counts per range: the entries each query matches (cached per segment as document sets by the host).</summary>
public sealed record RangeFacetSpec(IReadOnlyList<LuceneQuery> Ranges, IReadOnlyList<string> AggregateFields) : FacetSpec(AggregateFields)
{
    internal override void Write(FrameWriter w)
    {
        w.Byte(1).Int(Ranges.Count);
        foreach (var r in Ranges) r.Write(w);
        Strings(w, AggregateFields);
    }
}

/// <summary>
/// Counts per bucket of a long field (dates as .NET ticks): bucket = floor((v − <paramref name="Origin"/>) / <paramref name="Interval"/>),
/// reported as the bucket's start minus the origin, divided by <paramref name="Unit"/> (ticks → epoch seconds: origin = the
/// Unix epoch's ticks, unit = ticks per second), as a <see cref="FacetBucket.Number"/>.
/// </summary>
public sealed record HistogramFacetSpec(string Field, long Interval, long Origin, long Unit, IReadOnlyList<string> AggregateFields) : FacetSpec(AggregateFields)
{
    internal override void Write(FrameWriter w)
    {
        w.Byte(2).String(Field).Long(Interval).Long(Origin).Long(Unit);
        Strings(w, AggregateFields);
    }
}

/// <summary>The values of one aggregated field in a bucket: how many, their sum, min and max (mergeable across shards).</summary>
public sealed record FieldTotals(long N, double Sum,
    [property: System.Text.Json.Serialization.JsonNumberHandling(System.Text.Json.Serialization.JsonNumberHandling.AllowNamedFloatingPointLiterals)] double Min,
    [property: System.Text.Json.Serialization.JsonNumberHandling(System.Text.Json.Serialization.JsonNumberHandling.AllowNamedFloatingPointLiterals)] double Max)
{
    public static FieldTotals operator +(FieldTotals a, FieldTotals b) => new(a.N + b.N, a.Sum + b.Sum, Math.Min(a.Min, b.Min), Math.Max(a.Max, b.Max));
}

/// <summary>
/// One facet value (a term as <see cref="Text"/> or a number as <see cref="Number"/>) or range (<see cref="Range"/>, its
/// position in the request; -1 for values) with its entry count and aggregated fields' totals.
/// </summary>
public sealed record FacetBucket(string? Text, double? Number, int Range, long Count, IReadOnlyList<FieldTotals> Fields)
{
    public static FacetBucket operator +(FacetBucket a, FacetBucket b) => a with { Count = a.Count + b.Count, Fields = [.. a.Fields.Zip(b.Fields, (x, y) => x + y)] };
}

/// <summary>A query's matching entries counted, and every facet's buckets (all of them: callers merge shards, then order and cut).</summary>
public sealed record FacetCounts(long TotalHits, IReadOnlyList<IReadOnlyList<FacetBucket>> Facets);

/// <summary>The host's facet column cache: this index's share, and the host's total against its budget.</summary>
public sealed record FacetCacheStats(long IndexBytes, long IndexEntries, long HostBytes, long BudgetBytes, long HostEntries, long Hits, long Misses, long Evictions);
