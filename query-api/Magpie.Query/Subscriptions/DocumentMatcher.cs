using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Search;
using Magpie.Query.Rql;
using Magpie.Query.Shards;
using Magpie.Query.Projections;
using Magpie.Contracts.Documents;
using Magpie.Scripting;

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
    private readonly HitResults _results;

    private DocumentMatcher(RqlQuery query, IDocumentFilter? filter, HitResults results)
    {
        _query = query;
        _filter = filter;
        _results = results;
    }

    /// <summary>Throws <see cref="RqlException"/> for a query a subscription can't run: not over a collection, with parameters, ordering or paging,
    /// a condition the engine refuses, or loads and includes without a document store (<paramref name="documents"/> null).</summary>
    public static DocumentMatcher For(RqlQuery query, IDocumentFilters filters, IDocumentLookup? documents)
    {
        if (query.From.IsIndex) throw new RqlException("a subscription follows a collection: use 'from Collection', not 'from index'", 1, 1);
        // These rank documents against each other (and come ordered by score): a subscription matches each change alone.
        if (RqlConditionFields.Ranks(query.Where)) throw new RqlException("a subscription matches each changed document alone: vector.search, moreLikeThis and hybrid rank documents against each other", 1, 1);
        if (query.OrderBy.Count > 0 || query.Limit is not null) throw new RqlException("a subscription delivers in change order: no 'order by' or 'limit'", 1, 1);
        if (query.Facets.Count > 0) throw new RqlException("a subscription delivers documents: facets are for POST /queries", 1, 1);
        if (query.Timings || query.Explanations) throw new RqlException("timings() and explanations() are for POST /queries", 1, 1);
        if (query.GroupBy.Count > 0) throw new RqlException("a subscription delivers documents: group by is for POST /queries", 1, 1);
        if (query.Where is { } w && HasParameter(w)) throw new RqlException("a subscription query can't use $parameters", 1, 1);
        // Accepted and ignored would be silently wrong: each of these is refused by name.
        if (query.IsOperation) throw new RqlException("a subscription delivers documents: update { } and delete are set-based operations (POST /operations/queries)", 1, 1);
        if (query.Distinct) throw new RqlException("a subscription delivers each changed document: select distinct is for POST /queries", 1, 1);
        if (query.Highlights.Count > 0 || query.Suggestions.Count > 0) throw new RqlException("a subscription delivers documents: highlight() and suggest() are for POST /queries", 1, 1);
        try
        {
            var results = new HitResults(query, documents, ScriptLimits.Default);
            if (query.Where is null) return new DocumentMatcher(query, null, results);
            var (_, definition) = AutoIndexes.DefinitionFor(query);
            return new DocumentMatcher(query, filters.Create(definition, new QueryPlanner(definition, null).Where(query.Where)), results);
        }
        catch (QueryProblem e) { throw new RqlException(e.Message, 1, 1); }
        catch (IndexEngineException e) { throw new RqlException(e.Message, 1, 1); }
    }

    public string Collection => _query.From.Name;

    public bool Matches(ChangeEvent change) => _filter?.Matches(change) ?? true;

    /// <summary>
    /// What the worker gets for a changed document: the document itself, the selected paths under their aliases, or the
    /// JavaScript projection (over the document with its metadata and its loads); and the ids it includes.
    /// </summary>
    public async Task<(JsonNode? Result, IReadOnlyList<string> Includes)> ProjectAsync(ChangeEvent change, CancellationToken ct)
    {
        var document = change.Document!.Value;
        if (_query.Select.Count == 0 && _query.Script is null) return (JsonNode.Parse(document.GetRawText()), _results.IncludesOf(document));
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
            DocumentMetadata.WriteWithMetadata(w, document, change.Id, change.Collection, change.Etag, change.LastModified);
        using var withMetadata = JsonDocument.Parse(buffer.WrittenMemory);
        var result = await _results.ResultOfAsync(change.Id, withMetadata.RootElement, ct);
        return (result is { } r ? JsonNode.Parse(r.GetRawText()) : null, _results.IncludesOf(document));
    }

    /// <summary>The included documents of a batch, each once.</summary>
    public Task<Dictionary<string, JsonElement>?> IncludedAsync(IEnumerable<string> ids, CancellationToken ct) => _results.IncludedAsync(ids, ct);

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
