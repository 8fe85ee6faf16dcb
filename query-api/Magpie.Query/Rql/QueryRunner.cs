using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;

namespace Magpie.Query.Rql;

/// <summary>
/// A query planned once (where → Lucene query, order by → sort fields, select → stored fields), then read
/// a page at a time from any shard of the index.
/// </summary>
public sealed record QueryPlan(SearchQuery Where, IReadOnlyList<SortField> Sort, IReadOnlyList<string>? StoredFields)
{
    /// <summary>Each hit with its score explanation (<c>include explanations()</c>).</summary>
    public bool Explain { get; init; }

    /// <summary><c>select suggest(…)</c>: the words to find terms close to (the query then asks nothing else).</summary>
    public IReadOnlyList<SuggestPlan> Suggestions { get; init; } = [];

    /// <summary><c>include highlight(…)</c>: the fields to highlight in each hit, with the query's sizes and tags.</summary>
    public IReadOnlyList<HighlightSpec> Highlights { get; init; } = [];

    /// <summary>Fields this plan sorts numerically (an owner reports them so the coordinator can align owners).</summary>
    public IReadOnlyList<string> NumericSorts => Sort.Where(s => s.Kind == SortKind.Double).Select(s => s.Field[..^EntryFields.Number.Length]).ToList();

    /// <param name="snapshot">A point in time held on <paramref name="index"/> (a stream's), or 0 for now.</param>
    public Task<SearchPage> PageAsync(IShardSearcher index, int pageSize, int skip, SearchCursor? after, CancellationToken ct = default, long snapshot = 0) =>
        index.SearchAsync(new SearchRequest(Where, Sort, pageSize, skip, after, StoredFields, snapshot) { Explain = Explain }, ct);
}

/// <summary>Plans a parsed query against an index's shards: where → Lucene query, order by → sort fields, select → stored fields.</summary>
public static class QueryRunner
{
    /// <param name="numericSorts">Sort types already decided (by an earlier page, or the coordinator aligning shards):
    /// these fields sort numerically, other fields as strings; null = probe the shards.</param>
    public static async Task<QueryPlan> PlanAsync(IReadOnlyList<IShardSearcher> shards, IndexDefinition definition, RqlQuery query,
        IReadOnlyDictionary<string, JsonElement>? parameters, IReadOnlyCollection<string>? numericSorts = null, CancellationToken ct = default,
        Embeddings.Connections.EmbeddingConnections? embedders = null)
    {
        StaticIndexFields.Check(query, definition, () => shards.SelectMany(s => s.FieldNames()));
        var numberFields = new Lazy<IReadOnlySet<string>>(() => QueryPlanner.NumberFieldsOf(shards.SelectMany(s => s.FieldNames())));
        var planner = new QueryPlanner(definition, parameters, numberFields, embedders);
        await planner.EmbedTextsAsync(query.Where, ct);
        var where = planner.Where(query.Where);
        var highlights = query.Highlights.Select(h => planner.Highlight(h, query.From.IsIndex)).ToList();
        var sort = new List<SortField>();
        foreach (var order in query.OrderBy) sort.Add(await SortOfAsync(shards, order, numericSorts, ct));
        // With select: the projected stored fields, and the document source where the index keeps it (Kafka mode) unless every
        // selected field is stored (then no result reads its document; one without the value falls back to the store, if any).
        var allStored = query.Select.All(s => s.Field == RqlFields.Id || definition.Fields.TryGetValue(s.Field, out var f) && f.Store)
            && highlights.All(h => definition.FieldOptions(h.Field).Store);
        // Highlighted fields the index stores are read there too.
        IReadOnlyList<string>? stored = query.Select.Count > 0
            ? [.. query.Select.Select(s => s.Field + EntryFields.Stored), .. allStored ? Array.Empty<string>() : [EntryFields.Source],
               .. highlights.Where(h => definition.FieldOptions(h.Field).Store).Select(h => h.Field + EntryFields.Stored)]
            : null;
        return new QueryPlan(where, sort, stored) { Explain = query.Explanations, Highlights = highlights, Suggestions = query.Suggestions.Select(planner.Suggest).ToList() };
    }

    /// <summary>
    /// <c>as long/double</c> sorts numerically, <c>as string</c> by term, <c>as alphanumeric</c> by term with digits as numbers; otherwise as already decided, or
    /// numerically if any shard holds numbers for the field (probed on a query's first page only).
    /// </summary>
    private static async Task<SortField> SortOfAsync(IReadOnlyList<IShardSearcher> shards, RqlOrder order, IReadOnlyCollection<string>? numericSorts, CancellationToken ct)
    {
        if (order.IsScore) return SortField.Score with { Descending = order.Descending };
        if (order.IsRandom) return new SortField(SortKind.Random, EntryFields.Id, order.Descending) { Seed = order.Seed ?? Guid.NewGuid().ToString("N") };
        var field = order.Field == RqlFields.Id ? EntryFields.Id : order.Field!;
        if (order.As == RqlOrder.Alphanumeric) return new SortField(SortKind.Alphanumeric, field, order.Descending);
        if (order.Field == RqlFields.Id) return new SortField(SortKind.String, field, order.Descending);
        var numeric = order.As switch
        {
            "long" or "double" => true,
            "string" => false,
            _ when numericSorts is not null => numericSorts.Contains(order.Field!),
            _ => (await Task.WhenAll(shards.Select(s => s.SearchAsync(
                new SearchRequest(new ExistsQuery(order.Field + EntryFields.Number), [], 1, StoredFields: []), ct)))).Any(p => p.TotalHits > 0),
        };
        return numeric
            ? new SortField(SortKind.Double, order.Field + EntryFields.Number, order.Descending)
            : new SortField(SortKind.String, order.Field!, order.Descending);
    }
}
