using System.Text.Json.Serialization;

namespace Magpie.Contracts.Search;

/// <summary>
/// One facet to count over a query's matching entries: the values of some fields (<see cref="TermFacetSpec"/>), a list of
/// ranges (<see cref="RangeFacetSpec"/>) or date buckets (<see cref="HistogramFacetSpec"/>), with totals of numeric
/// <see cref="AggregateFields"/> (double fields) per value.
/// </summary>
public abstract record FacetSpec(IReadOnlyList<string> AggregateFields);

/// <summary>Counts per value of <paramref name="StringFields"/> (terms) and <paramref name="NumberFields"/> (double fields).</summary>
public sealed record TermFacetSpec(IReadOnlyList<string> StringFields, IReadOnlyList<string> NumberFields, IReadOnlyList<string> AggregateFields)
    : FacetSpec(AggregateFields);

/// <summary>Counts per range: the entries each query matches.</summary>
public sealed record RangeFacetSpec(IReadOnlyList<SearchQuery> Ranges, IReadOnlyList<string> AggregateFields) : FacetSpec(AggregateFields);

/// <summary>
/// Counts per bucket of a long field (dates as .NET ticks): bucket = floor((v − <paramref name="Origin"/>) / <paramref name="Interval"/>),
/// reported as the bucket's start minus the origin, divided by <paramref name="Unit"/> (ticks → epoch seconds: origin = the
/// Unix epoch's ticks, unit = ticks per second), as a <see cref="FacetBucket.Number"/>.
/// </summary>
/// <remarks><paramref name="Calendar"/> (<c>year</c>, <c>month</c>, <c>week</c>, <c>day</c>, <c>hour</c>, <c>minute</c>): buckets are calendar
/// units in UTC, as PostgreSQL's <c>date_trunc</c> makes them (a week starts on Monday), and <paramref name="Interval"/> is not used.</remarks>
public sealed record HistogramFacetSpec(string Field, long Interval, long Origin, long Unit, IReadOnlyList<string> AggregateFields, string? Calendar = null)
    : FacetSpec(AggregateFields)
{
    public static readonly IReadOnlyList<string> CalendarUnits = ["year", "month", "week", "day", "hour", "minute"];

    /// <summary>The bucket <paramref name="ticks"/> (a UTC date's .NET ticks) falls in: its start, in ticks.</summary>
    public long BucketStart(long ticks)
    {
        if (Calendar is null)
        {
            var bucket = Math.DivRem(ticks - Origin, Interval) is var (q, r) && r < 0 ? q - 1 : q;   // floor
            return Origin + bucket * Interval;
        }
        var d = new DateTime(ticks, DateTimeKind.Utc);
        return Calendar switch
        {
            "year" => new DateTime(d.Year, 1, 1).Ticks,
            "month" => new DateTime(d.Year, d.Month, 1).Ticks,
            "week" => d.Date.AddDays(-(((int)d.DayOfWeek + 6) % 7)).Ticks,
            "day" => d.Date.Ticks,
            "hour" => ticks - ticks % TimeSpan.TicksPerHour,
            "minute" => ticks - ticks % TimeSpan.TicksPerMinute,
            _ => throw new ArgumentException($"unknown calendar unit '{Calendar}'"),
        };
    }
}

/// <summary>The values of one aggregated field in a bucket: how many, their sum, min and max (mergeable across shards).</summary>
public sealed record FieldTotals(long N, double Sum,
    [property: JsonNumberHandling(JsonNumberHandling.AllowNamedFloatingPointLiterals)] double Min,
    [property: JsonNumberHandling(JsonNumberHandling.AllowNamedFloatingPointLiterals)] double Max)
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
