using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Search;
using Magpie.Query.Rql;
using Magpie.Query.Shards;

namespace Magpie.Query.Subscriptions;

/// <summary>
/// A subscription's RQL <c>where</c> and <c>select</c> applied to one changed document. The <c>where</c> is planned against the
/// automatic index the same query would use, and the document runs through that index's map and the engine's query
/// (<see cref="IDocumentFilters"/>): a condition means exactly what it means in a query. <c>select</c> picks property paths
/// (<c>Address.City</c>).
/// </summary>
public sealed class DocumentMatcher
{
    private readonly RqlQuery _query;
    private readonly IDocumentFilter? _filter;

    private DocumentMatcher(RqlQuery query, IDocumentFilter? filter)
    {
        _query = query;
        _filter = filter;
    }

    /// <summary>Throws <see cref="RqlException"/> for a query a subscription can't run: not over a collection, with parameters, ordering or paging,
    /// or a condition the engine refuses.</summary>
    public static DocumentMatcher For(RqlQuery query, IDocumentFilters filters)
    {
        if (query.From.IsIndex) throw new RqlException("a subscription follows a collection: use 'from Collection', not 'from index'", 1, 1);
        if (query.OrderBy.Count > 0 || query.Limit is not null) throw new RqlException("a subscription delivers in change order: no 'order by' or 'limit'", 1, 1);
        if (query.Facets.Count > 0) throw new RqlException("a subscription delivers documents: facets are for POST /queries", 1, 1);
        if (query.Where is null) return new DocumentMatcher(query, null);
        if (HasParameter(query.Where)) throw new RqlException("a subscription query can't use $parameters", 1, 1);
        try
        {
            var (_, definition) = AutoIndexes.DefinitionFor(query);
            return new DocumentMatcher(query, filters.Create(definition, new QueryPlanner(definition, null).Where(query.Where)));
        }
        catch (QueryProblem e) { throw new RqlException(e.Message, 1, 1); }
        catch (IndexEngineException e) { throw new RqlException(e.Message, 1, 1); }
    }

    public string Collection => _query.From.Name;

    public bool Matches(ChangeEvent change) => _filter?.Matches(change) ?? true;

    /// <summary>The document itself, or with <c>select</c> an object of the selected fields under their aliases.</summary>
    public JsonNode? Project(JsonElement document)
    {
        if (_query.Select.Count == 0) return JsonNode.Parse(document.GetRawText());
        var result = new JsonObject();
        foreach (var p in _query.Select)
            result[p.Alias] = Values(document, p.Field).FirstOrDefault() is { ValueKind: not JsonValueKind.Undefined } v ? JsonNode.Parse(v.GetRawText()) : null;
        return result;
    }

    /// <summary>The values at a dotted path, through arrays; Undefined when the path is missing.</summary>
    private static IEnumerable<JsonElement> Values(JsonElement d, string path)
    {
        IEnumerable<JsonElement> current = [d];
        foreach (var part in path.Split('.'))
            current = current.SelectMany(c => c.ValueKind switch
            {
                JsonValueKind.Object => c.TryGetProperty(part, out var p) ? [p] : [default],
                JsonValueKind.Array => c.EnumerateArray().Select(e => e.ValueKind == JsonValueKind.Object && e.TryGetProperty(part, out var p) ? p : default),
                _ => [default(JsonElement)],
            });
        return current;
    }

    private static bool HasParameter(RqlExpression e) => e switch
    {
        RqlAnd a => HasParameter(a.Left) || HasParameter(a.Right),
        RqlOr o => HasParameter(o.Left) || HasParameter(o.Right),
        RqlNot n => HasParameter(n.Inner),
        RqlCompare c => c.Value.IsParameter,
        RqlBetween b => b.Low.IsParameter || b.High.IsParameter,
        RqlIn i => i.Values.Any(v => v.IsParameter),
        RqlStartsWith s => s.Prefix.IsParameter,
        RqlSearch s => s.Terms.IsParameter,
        RqlProximity p => p.Search.Terms.IsParameter || p.Distance.IsParameter,
        RqlBoost b => HasParameter(b.Inner) || b.Factor.IsParameter,
        RqlFuzzy f => f.Value.IsParameter || f.Factor?.IsParameter == true,
        RqlEndsWith s => s.Suffix.IsParameter,
        RqlRegex r => r.Pattern.IsParameter,
        RqlLucene l => l.Text.IsParameter,
        _ => false,
    };
}
