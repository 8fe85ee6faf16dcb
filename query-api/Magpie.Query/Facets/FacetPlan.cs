using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Query.Rql;

namespace Magpie.Query.Facets;

/// <summary>
/// A query's facets as the index engine counts them, over the fields <see cref="EntryFields"/> wrote: a term facet
/// reads the values with their case (<c>F@cs</c>; a search field its lower-cased text) and the numbers (<c>F@num</c>);
/// a range is the condition planned like a <c>where</c> (so numbers, ISO dates and strings range as they do there);
/// aggregations read <c>F@num</c>.
/// </summary>
public static class FacetPlan
{
    public static IReadOnlyList<FacetSpec> Specs(IReadOnlyList<RqlFacet> facets, IndexDefinition definition, IReadOnlyDictionary<string, JsonElement>? parameters)
    {
        var planner = new QueryPlanner(definition, parameters);
        return facets.Select(f =>
        {
            // A date field's values (its @ticks, as the SQL runner names them for min/max of a timestamp) are aggregated as epoch seconds.
            IReadOnlyList<string> aggregates = [.. f.Aggregations.Select(a => a.Field.EndsWith(EntryFields.Ticks, StringComparison.Ordinal) ? a.Field : a.Field + EntryFields.Number).Distinct()];
            if (f.Field is { } dates && f.IntervalSeconds is { } seconds)
                return new HistogramFacetSpec(dates + EntryFields.Ticks, seconds * TimeSpan.TicksPerSecond, DateTime.UnixEpoch.Ticks, TimeSpan.TicksPerSecond, aggregates);
            if (f.Field is { } calendarDates && f.Calendar is { } unit)
                return new HistogramFacetSpec(calendarDates + EntryFields.Ticks, 1, DateTime.UnixEpoch.Ticks, TimeSpan.TicksPerSecond, aggregates, unit);
            if (f.Field is { } field)
            {
                var search = definition.FieldOptions(field).Indexing == IndexFieldOptions.Search;
                return (FacetSpec)new TermFacetSpec([search ? field : field + EntryFields.CaseSensitive], [field + EntryFields.Number], aggregates);
            }
            return new RangeFacetSpec(f.Ranges.Count == 0 ? [SearchQuery.All] : [.. f.Ranges.Select(r => planner.Where(r.Expression))], aggregates);
        }).ToList();
    }
}
