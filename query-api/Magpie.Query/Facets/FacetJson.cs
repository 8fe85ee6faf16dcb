using Magpie.Contracts;
using Magpie.Contracts.Search;
using System.Text.Json;
using Magpie.Query.Rql;

namespace Magpie.Query.Facets;

/// <summary>
/// Facets given in a query request's body, beside the results:
/// <c>"facets": [{ "field": "Brand", "top": 10, "order": "countDesc", "includeRemaining": true, "sum": ["Price"], "max": ["Price"] },
/// { "name": "Price", "ranges": ["Price &lt; 200", "Price between 200 and 400", "Price &gt;= 400"] }]</c> — the same
/// facets as RQL's <c>select facet(…)</c> (ranges are RQL conditions), and the same options.
/// A facet with neither <c>field</c> nor <c>ranges</c> counts (and aggregates) every matching entry in one bucket.
/// </summary>
public static class FacetJson
{
    public static IReadOnlyList<RqlFacet> Read(IReadOnlyList<JsonElement>? facets)
    {
        if (facets is null) return [];
        var result = new List<RqlFacet>();
        for (var i = 0; i < facets.Count; i++)
        {
            var f = facets[i];
            Exception Bad(string message) => new QueryProblem(ErrorKind.Invalid, $"facets[{i}]: {message}");
            if (f.ValueKind != JsonValueKind.Object) throw Bad("a facet is an object: { \"field\": \"Brand\" } or { \"ranges\": [\"Price < 200\", …] }");
            var field = f.TryGetProperty("field", out var fe) ? fe.ValueKind == JsonValueKind.String ? fe.GetString() : throw Bad("\"field\" is a field name") : null;
            var ranges = new List<RqlRange>();
            if (f.TryGetProperty("ranges", out var re))
            {
                if (re.ValueKind != JsonValueKind.Array || re.GetArrayLength() == 0) throw Bad("\"ranges\" is a non-empty array of RQL conditions");
                foreach (var r in re.EnumerateArray())
                {
                    if (r.ValueKind != JsonValueKind.String) throw Bad("each range is an RQL condition as a string, like \"Price < 200\"");
                    var text = r.GetString()!;
                    try { ranges.Add(new RqlRange(text.Trim(), RqlParser.ParseCondition(text))); }
                    catch (RqlException e) { throw Bad($"range '{text}': {e.Message}"); }
                }
            }
            if (field is not null && ranges.Count > 0) throw Bad("give \"field\" (counts per value) or \"ranges\", not both");
            var aggregations = new List<RqlAggregation>();
            foreach (var op in RqlAggregation.Operations.Order())
            {
                if (!f.TryGetProperty(op, out var fields)) continue;
                if (fields.ValueKind != JsonValueKind.Array || fields.EnumerateArray().Any(x => x.ValueKind != JsonValueKind.String))
                    throw Bad($"\"{op}\" is an array of numeric field names");
                aggregations.AddRange(fields.EnumerateArray().Select(x => new RqlAggregation(op, x.GetString()!)));
            }
            // Neither field nor ranges: one bucket of every matching entry (totals, e.g. SQL aggregates without GROUP BY).
            var name = f.TryGetProperty("name", out var ne) && ne.ValueKind == JsonValueKind.String ? ne.GetString()! : field ?? (ranges.Count > 0 ? ranges[0].Label : "all");
            long? interval = null;
            if (f.TryGetProperty("interval", out var ie))
            {
                if (field is null || ie.ValueKind != JsonValueKind.Number || !ie.TryGetInt64(out var seconds) || seconds <= 0)
                    throw Bad("\"interval\" (seconds, a whole number > 0) buckets the dates of \"field\"");
                interval = seconds;
            }
            string? calendar = null;
            if (f.TryGetProperty("calendar", out var ce))
            {
                if (field is null || interval is not null || ce.ValueKind != JsonValueKind.String || !HistogramFacetSpec.CalendarUnits.Contains(ce.GetString()!))
                    throw Bad($"\"calendar\" ({string.Join(", ", HistogramFacetSpec.CalendarUnits)}) buckets the dates of \"field\", instead of \"interval\"");
                calendar = ce.GetString();
            }
            result.Add(new RqlFacet(name, field, ranges, aggregations, FacetOptions.FromJson(f, Bad)) { IntervalSeconds = interval, Calendar = calendar });
        }
        return result;
    }
}
