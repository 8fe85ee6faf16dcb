using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Lucene;
using Magpie.Indexer.Maps;

namespace Magpie.Query.Rql;

/// <summary>A query planned once (where → Lucene query, order by → sort fields, select → stored fields), then read a page at a time.</summary>
public sealed record PreparedQuery(LuceneIndex Index, LuceneQuery Where, IReadOnlyList<SortField> Sort, IReadOnlyList<string>? StoredFields)
{
    public Task<SearchPage> PageAsync(int pageSize, int skip, SearchCursor? after, CancellationToken ct = default) =>
        Index.SearchAsync(new SearchRequest(Where, Sort, pageSize, skip, after, StoredFields), ct);
}

/// <summary>Runs a parsed query against one index: where → Lucene query, order by → sort fields, limit/offset or a cursor → the page.</summary>
public static class QueryRunner
{
    public static async Task<SearchPage> RunAsync(LuceneIndex index, IndexDefinition definition, RqlQuery query,
        IReadOnlyDictionary<string, JsonElement>? parameters, int pageSize, int start = 0, SearchCursor? after = null, CancellationToken ct = default)
    {
        var prepared = await PrepareAsync(index, definition, query, parameters, ct);
        return await prepared.PageAsync(query.Limit ?? pageSize, query.Offset ?? start, after, ct);
    }

    /// <summary>Plans the query; a stream reuses the plan for every page instead of planning (and probing sort types) again.</summary>
    public static async Task<PreparedQuery> PrepareAsync(LuceneIndex index, IndexDefinition definition, RqlQuery query,
        IReadOnlyDictionary<string, JsonElement>? parameters, CancellationToken ct = default)
    {
        var where = new QueryPlanner(definition, parameters).Where(query.Where);
        var sort = new List<SortField>();
        foreach (var order in query.OrderBy) sort.Add(await SortOfAsync(index, order, ct));
        var stored = query.Select.Count > 0 ? query.Select.Select(s => s.Field + EntryFields.Stored).ToList() : null;
        return new PreparedQuery(index, where, sort, stored);
    }

    /// <summary><c>as long/double</c> sorts numerically, <c>as string</c> by term; otherwise numerically if the index holds numbers for the field.</summary>
    private static async Task<SortField> SortOfAsync(LuceneIndex index, RqlOrder order, CancellationToken ct)
    {
        if (order.IsScore) return SortField.Score with { Descending = order.Descending };
        var numeric = order.As switch
        {
            "long" or "double" => true,
            "string" or "alphanumeric" => false,
            _ => (await index.SearchAsync(new SearchRequest(new ExistsQuery(order.Field + EntryFields.Number), [], 1, StoredFields: []), ct)).TotalHits > 0,
        };
        return numeric
            ? new SortField(SortKind.Double, order.Field + EntryFields.Number, order.Descending)
            : new SortField(SortKind.String, order.Field!, order.Descending);
    }
}
