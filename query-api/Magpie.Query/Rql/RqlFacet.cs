using System.Text.Json;
namespace Magpie.Query.Rql;

/// <summary>
/// <c>facet(Brand)</c>, <c>facet(Price &lt; 200, Price between 200 and 400, Price &gt;= 400)</c>,
/// <c>facet(Brand, sum(Price), max(Price), $options)</c>: counts per value of one field, or per range, with
/// numeric aggregations per value. <see cref="Name"/> is the alias, else the field (of the first range).
/// </summary>
public sealed record RqlFacet(string Name, string? Field, IReadOnlyList<RqlRange> Ranges, IReadOnlyList<RqlAggregation> Aggregations, FacetOptions Options)
{
    /// <summary>A date histogram: <see cref="Field"/>'s ISO dates counted per bucket of this many seconds (values: the bucket's start, epoch seconds).</summary>
    public long? IntervalSeconds { get; init; }

    /// <summary>A date histogram by calendar unit (<c>year</c>, <c>month</c>, <c>week</c>, <c>day</c>, <c>hour</c>, <c>minute</c>, UTC), as PostgreSQL's <c>date_trunc</c> buckets.</summary>
    public string? Calendar { get; init; }
}

/// <summary>One range of a range facet: the condition as written (its label in the answer), and parsed.</summary>
public sealed record RqlRange(string Label, RqlExpression Expression);

/// <summary><c>sum(F)</c>, <c>min(F)</c>, <c>max(F)</c> or <c>avg(F)</c> of a numeric field, per facet value.</summary>
public sealed record RqlAggregation(string Operation, string Field)
{
    public static readonly IReadOnlySet<string> Operations = new HashSet<string> { "sum", "min", "max", "avg" };
}

/// <summary>
/// Which values a term facet returns: the first <see cref="Top"/> (null: all) in <see cref="Order"/> (<c>countDesc</c>,
/// the default, then by value; <c>countAsc</c>, <c>valueAsc</c>, <c>valueDesc</c>), and with <see cref="IncludeRemaining"/>
/// how many values and entries the cut left out. Ranges always come back all, in the order asked.
/// </summary>
public sealed record FacetOptions(int? Top = null, string Order = FacetOptions.CountDesc, bool IncludeRemaining = false)
{
    public const string CountDesc = "countDesc", CountAsc = "countAsc", ValueAsc = "valueAsc", ValueDesc = "valueDesc";
    public static readonly IReadOnlyList<string> Orders = [CountDesc, CountAsc, ValueAsc, ValueDesc];

    /// <summary><c>{ "top": n, "order": "countDesc|countAsc|valueAsc|valueDesc", "includeRemaining": bool }</c>; other properties are the facet's own.</summary>
    public static FacetOptions FromJson(JsonElement o, Func<string, Exception> bad)
    {
        if (o.ValueKind != JsonValueKind.Object) throw bad("facet options are an object: { \"top\": 10, \"order\": \"countDesc\", \"includeRemaining\": true }");
        var options = new FacetOptions();
        if (o.TryGetProperty("top", out var top))
            options = top.ValueKind == JsonValueKind.Number && top.TryGetInt32(out var n) && n >= 0 ? options with { Top = n } : throw bad("\"top\" is a whole number ≥ 0");
        if (o.TryGetProperty("order", out var order))
        {
            var text = order.ValueKind == JsonValueKind.String ? order.GetString() : null;
            var known = FacetOptions.Orders.FirstOrDefault(x => string.Equals(x, text, StringComparison.OrdinalIgnoreCase));
            options = known is not null ? options with { Order = known } : throw bad($"\"order\" is one of {string.Join(", ", FacetOptions.Orders)}");
        }
        if (o.TryGetProperty("includeRemaining", out var rem))
            options = rem.ValueKind is JsonValueKind.True or JsonValueKind.False ? options with { IncludeRemaining = rem.GetBoolean() } : throw bad("\"includeRemaining\" is true or false");
        return options;
    }
}
