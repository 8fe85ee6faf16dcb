using System.Text.RegularExpressions;
using Magpie.Contracts.Indexes;
using Magpie.Query.Rql;

namespace Magpie.Query.Shards;

/// <summary>
/// <c>from Collection</c> queries, as RavenDB answers them: through an automatic index over the fields the
/// query filters and sorts on, named <c>Auto/{Collection}/By{Field}And{Field}</c> (search fields end in
/// <c>_search</c>). An existing auto index of the collection that covers the fields is reused; otherwise
/// one is defined (durably, like any other) and the query runs on it — stale until it has caught up, so
/// <c>waitForNonStaleResults</c> applies as usual.
/// </summary>
public sealed partial class AutoIndexes(IIndexDefinitions definitions)
{
    public async Task<string> IndexForAsync(RqlQuery query, CancellationToken ct)
    {
        var (indexName, definition, exact, search) = Plan(query);
        var prefix = $"Auto/{query.From.Name}/";
        foreach (var (name, d) in definitions.Current.Where(d => d.Key.StartsWith(prefix, StringComparison.OrdinalIgnoreCase)))
            if (Covers(d, exact, search)) return name;
        try { await definitions.PutAsync(indexName, definition, ct); }
        catch (IndexDefinitionException e) { throw new QueryProblem(e.Status, $"the automatic index {indexName} was refused: {e.Message}"); }
        return indexName;
    }

    /// <summary>The automatic index a query over a collection needs (its name and definition), whether or not it exists.</summary>
    public static (string Name, IndexDefinition Definition) DefinitionFor(RqlQuery query)
    {
        var (name, definition, _, _) = Plan(query);
        return (name, definition);
    }

    private static (string Name, IndexDefinition Definition, SortedSet<string> Exact, SortedSet<string> Search) Plan(RqlQuery query)
    {
        var collection = query.From.Name;
        if (!CollectionPattern().IsMatch(collection)) throw new QueryProblem(400, $"'{collection}' is not a collection name this version can index automatically");
        var exact = new SortedSet<string>(StringComparer.Ordinal);
        var search = new SortedSet<string>(StringComparer.Ordinal);
        Collect(query.Where, exact, search);
        foreach (var o in query.OrderBy.Where(o => !o.IsScore && o.Field != RqlFields.Id)) if (!search.Contains(o.Field!)) exact.Add(o.Field!);
        // Facets count the values of their fields, ranges and aggregated fields: those are indexed (exact) too.
        foreach (var f in query.Facets)
        {
            if (f.Field is { } field && !search.Contains(field)) exact.Add(field);
            foreach (var r in f.Ranges) Collect(r.Expression, exact, search);
            foreach (var a in f.Aggregations) if (!search.Contains(a.Field)) exact.Add(a.Field);
        }
        if (exact.Concat(search).FirstOrDefault(f => !FieldPattern().IsMatch(f)) is { } bad)
            throw new QueryProblem(400, $"'{bad}' can't be indexed automatically: fields are letters, digits, '_' and '.' paths");

        var fields = exact.Select(f => (Field: f, Search: false)).Concat(search.Select(f => (Field: f, Search: true))).OrderBy(f => f.Field, StringComparer.Ordinal).ToList();
        var indexName = $"Auto/{collection}/" + (fields.Count == 0 ? "All" : "By" + string.Join("And", fields.Select(f => f.Search ? f.Field + "_search" : f.Field)));
        var definition = new IndexDefinition
        {
            Maps = [Map(collection, fields.Select(f => f.Field))],
            Fields = fields.Where(f => f.Search).ToDictionary(f => f.Field, _ => new IndexFieldOptions { Indexing = IndexFieldOptions.Search }),
        };
        return (indexName, definition, exact, search);
    }

    /// <summary>Each field by its dotted path; a missing step leaves the field out of the entry (so <c>exists()</c> tells missing from null) instead of a TypeError.</summary>
    private static string Map(string collection, IEnumerable<string> fields) =>
        $"map('{collection}', function (d) {{ function get(o, path) {{ var steps = path.split('.'); " +
        "for (var i = 0; i < steps.length; i++) { if (o === null || o === undefined) return undefined; o = o[steps[i]]; } " +
        "return o; } " +
        $"return {{ {string.Join(", ", fields.Select(f => $"'{f}': get(d, '{f}')"))} }}; }})";

    /// <summary>An auto index of this version's map (an older one wrote null for a missing field) with every field, each indexed as asked.</summary>
    private static bool Covers(IndexDefinition d, IReadOnlySet<string> exact, IReadOnlySet<string> search) =>
        d.Maps.Count == 1 && d.Maps[0].Contains("return undefined;", StringComparison.Ordinal) && exact.All(f => d.Maps[0].Contains($"'{f}': get(") && d.FieldOptions(f).Indexing == IndexFieldOptions.Exact)
        && search.All(f => d.Maps[0].Contains($"'{f}': get(") && d.FieldOptions(f).Indexing == IndexFieldOptions.Search);

    private static void Collect(RqlExpression? e, ISet<string> exact, ISet<string> search)
    {
        // id() is every entry's own term: no field of the map.
        foreach (var (field, text) in RqlConditionFields.Of(e).Where(f => f.Field != RqlFields.Id))
            if (text)
            {
                search.Add(field);
                exact.Remove(field);
            }
            else if (!search.Contains(field)) exact.Add(field);
    }

    [GeneratedRegex("^[A-Za-z0-9_][A-Za-z0-9_.-]{0,60}$")]
    private static partial Regex CollectionPattern();

    [GeneratedRegex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$")]
    private static partial Regex FieldPattern();
}
