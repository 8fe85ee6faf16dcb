using System.Text.RegularExpressions;
using Magpie.Contracts.Indexes;

namespace Magpie.Query.Rql;

/// <summary>
/// A static index answers about the fields it has: a condition, sort or facet on a field it does not have is refused (as
/// RavenDB refuses it) instead of matching nothing. A field is the index's when its entries hold it, its definition
/// configures it, or a map or reduce names it as an output key (<c>Title:</c>, <c>'Title':</c>, <c>{ Title }</c>) — so an
/// index that has not yet seen a document with the field still answers for it.
/// </summary>
public static partial class StaticIndexFields
{
    public static void Check(RqlQuery query, IndexDefinition definition, Func<IEnumerable<string>> fieldNames)
    {
        if (!query.From.IsIndex) return;
        var asked = RqlConditionFields.Of(query.Where).Select(f => f.Field)
            .Concat(query.OrderBy.Select(o => o.Field).OfType<string>())
            .Concat(query.Facets.SelectMany(f => f.Ranges.SelectMany(r => RqlConditionFields.Of(r.Expression).Select(x => x.Field))
                .Concat(f.Aggregations.Select(a => a.Field)).Concat(f.Field is { } field ? [field] : [])))
            .Concat(query.Suggestions.Select(s => s.Field)).Concat(query.Highlights.Select(h => h.Field))
            .Where(f => f != RqlFields.Id).Select(WithoutSuffix).Distinct(StringComparer.Ordinal);
        HashSet<string>? known = null;
        foreach (var field in asked)
        {
            known ??= Known(definition, fieldNames());
            if (known.Contains(field) || Named(definition, field)) continue;
            var list = known.Order(StringComparer.Ordinal).Take(50).ToList();
            throw new RqlException($"the index has no field '{field}'" +
                (list.Count == 0 ? " (it has indexed no entries yet and its definition names no such output)" : $"; its fields: {string.Join(", ", list)}{(known.Count > 50 ? ", …" : "")}"), 1, 1);
        }
    }

    /// <summary>The fields the entries hold (without Magpie's suffixes and internal fields) and the ones the definition configures.</summary>
    private static HashSet<string> Known(IndexDefinition definition, IEnumerable<string> fieldNames)
    {
        var known = new HashSet<string>(definition.Fields.Keys, StringComparer.Ordinal);
        foreach (var name in fieldNames)
        {
            if (!name.StartsWith('@')) known.Add(WithoutSuffix(name));
        }
        return known;
    }

    /// <summary>The index field a name is of (<c>CreationDate@ticks</c>: <c>CreationDate</c>; SQL aggregates of dates name those).</summary>
    private static string WithoutSuffix(string name) => name.IndexOf('@') is > 0 and var at ? name[..at] : name;

    private static bool Named(IndexDefinition definition, string field)
    {
        var key = new Regex($@"(?:^|[{{,\s])['""]?{Regex.Escape(field)}['""]?\s*:|[{{,]\s*{Regex.Escape(field)}\s*[,}}]", RegexOptions.None, TimeSpan.FromSeconds(1));
        return definition.Maps.Append(definition.Reduce ?? "").Any(key.IsMatch);
    }
}
