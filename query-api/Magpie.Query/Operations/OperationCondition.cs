using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Query.Rql;
using Magpie.Query.Shards;

namespace Magpie.Query.Operations;

/// <summary>Whether a document read again during an update or delete by query still matches the query, as RavenDB re-checks it.</summary>
public static class OperationCondition
{
    /// <summary>
    /// The query's condition on one document, through the index's own map (the one-document filter subscriptions use), so a document
    /// changed under the operation is written only if it still matches. Null where no condition can be checked so: no where, a
    /// ranking (vector.search, moreLikeThis), a map/reduce index.
    /// </summary>
    public static Func<JsonElement, bool>? For(RqlQuery query, IReadOnlyDictionary<string, JsonElement>? parameters, IDocumentFilters? filters, IIndexDefinitions? definitions)
    {
        if (filters is null || query.Where is null || RqlConditionFields.Ranks(query.Where)) return null;
        var definition = query.From.IsIndex ? definitions?.Current.GetValueOrDefault(query.From.Name) : AutoIndexes.DefinitionFor(query).Definition;
        if (definition is null || definition.Reduce is not null) return null;
        IDocumentFilter filter;
        try { filter = filters.Create(definition, new QueryPlanner(definition, parameters).Where(query.Where)); }
        catch (Exception e) when (e is IndexEngineException or QueryProblem) { return null; }
        return document =>
        {
            var m = document.GetProperty("@metadata");
            var body = JsonNode.Parse(document.GetRawText())!.AsObject();
            body.Remove("@metadata");
            var change = new ChangeEvent(m.GetProperty("@id").GetString()!, m.GetProperty("@collection").GetString()!,
                m.GetProperty("@etag").GetInt64(), ChangeOp.Put, DateTimeOffset.UtcNow, JsonSerializer.SerializeToElement(body));
            lock (filter) return filter.Matches(change);
        };
    }
}
