using System.Text.Json.Serialization;
using Magpie.Contracts.Search;
using Magpie.Contracts.Indexes;
using Magpie.Query.Rql;

namespace Magpie.Query.Facets;

/// <summary>One facet in a query's answer: its values (or ranges) with counts and aggregations, and what <c>top</c> left out.</summary>
public sealed record FacetResult(
    string Name,
    IReadOnlyList<FacetValue> Values,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] long? RemainingTerms,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] long? RemainingHits);

/// <summary>A value (a string, a number, null) or a range's label, its entry count, and per aggregation the field's figure (null where no entry had one).</summary>
public sealed record FacetValue(
    object? Value,
    long Count,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyDictionary<string, double?>? Sum,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyDictionary<string, double?>? Min,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyDictionary<string, double?>? Max,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyDictionary<string, double?>? Avg);

/// <summary>
/// Shards' facet counts added up (every shard sends every value, so the sums are exact), then each facet shaped by
/// its options: values ordered, cut to the top N, the rest counted; ranges in the order asked.
/// </summary>
public static class FacetResults
{
    public static IReadOnlyList<IReadOnlyList<FacetBucket>> Merge(IReadOnlyList<IReadOnlyList<IReadOnlyList<FacetBucket>>> shards)
    {
        if (shards.Count == 1) return shards[0];
        var merged = new List<IReadOnlyList<FacetBucket>>();
        for (var i = 0; i < shards[0].Count; i++)
        {
            var byKey = new Dictionary<(string?, double?, int), FacetBucket>();
            foreach (var shard in shards)
                foreach (var b in shard[i])
                    byKey[(b.Text, b.Number, b.Range)] = byKey.TryGetValue((b.Text, b.Number, b.Range), out var sum) ? sum + b : b;
            merged.Add([.. byKey.Values]);
        }
        return merged;
    }

    public static IReadOnlyList<FacetResult> Shape(IReadOnlyList<RqlFacet> facets, IReadOnlyList<IReadOnlyList<FacetBucket>> counts) =>
        facets.Select((f, i) => Shape(f, counts[i])).ToList();

    private static FacetResult Shape(RqlFacet facet, IReadOnlyList<FacetBucket> buckets)
    {
        var fields = facet.Aggregations.Select(a => a.Field).Distinct().ToList();
        if (facet.Field is null)
        {
            var values = facet.Ranges.Select((r, i) =>
                Value(r.Label, buckets.FirstOrDefault(b => b.Range == i) ?? new FacetBucket(null, null, i, 0, [.. fields.Select(_ => Empty)]), facet, fields)).ToList();
            return new FacetResult(facet.Name, values, null, null);
        }
        var ordered = facet.Options.Order switch
        {
            FacetOptions.CountAsc => buckets.OrderBy(b => b.Count).ThenBy(b => b, ByValue),
            FacetOptions.ValueAsc => buckets.OrderBy(b => b, ByValue),
            FacetOptions.ValueDesc => buckets.OrderByDescending(b => b, ByValue),
            _ => buckets.OrderByDescending(b => b.Count).ThenBy(b => b, ByValue),
        };
        var kept = ordered.Take(facet.Options.Top ?? int.MaxValue).ToList();
        var left = buckets.Count - kept.Count;
        return new FacetResult(facet.Name, [.. kept.Select(b => Value(ValueOf(b), b, facet, fields))],
            facet.Options.IncludeRemaining ? left : null,
            facet.Options.IncludeRemaining ? buckets.Sum(b => b.Count) - kept.Sum(b => b.Count) : null);
    }

    private static readonly FieldTotals Empty = new(0, 0, double.PositiveInfinity, double.NegativeInfinity);

    private static object? ValueOf(FacetBucket b) => b.Number ?? (b.Text == EntryFields.NullValue ? null : (object?)b.Text);

    private static FacetValue Value(object? value, FacetBucket b, RqlFacet facet, List<string> fields)
    {
        Dictionary<string, double?>? Figures(string op, Func<FieldTotals, double?> figure)
        {
            var asked = facet.Aggregations.Where(a => a.Operation == op).ToList();
            return asked.Count == 0 ? null : asked.ToDictionary(a => a.Field, a => figure(b.Fields[fields.IndexOf(a.Field)]));
        }
        return new FacetValue(value, b.Count,
            Figures("sum", t => t.Sum),
            Figures("min", t => t.N > 0 ? t.Min : null),
            Figures("max", t => t.N > 0 ? t.Max : null),
            Figures("avg", t => t.N > 0 ? t.Sum / t.N : null));
    }

    /// <summary>Numbers in numeric order, then strings in ordinal order, then null.</summary>
    private static readonly Comparer<FacetBucket> ByValue = Comparer<FacetBucket>.Create((a, b) =>
    {
        int Rank(FacetBucket x) => x.Number is not null ? 0 : x.Text == EntryFields.NullValue ? 2 : 1;
        var r = Rank(a).CompareTo(Rank(b));
        if (r != 0) return r;
        return a.Number is { } n ? n.CompareTo(b.Number!.Value) : string.CompareOrdinal(a.Text, b.Text);
    });
}
