using Magpie.Indexer.Definitions;
using Magpie.Indexer.Lucene;
using Magpie.Query.Http;
using Magpie.Query.Rql;

namespace Magpie.Query.Shards;

/// <summary>
/// Runs a query over every shard of its index: asks each owner for its top hits after the cursor, merges
/// by cursor (sort values, then document id — the same order in every shard), skips and takes. Totals add
/// up; a page is stale if any shard was, or if some partition had no owner. Owners that typed a sort field
/// differently (numbers in one shard, none in another) are asked again with the field numeric everywhere.
/// </summary>
public sealed class QueryCoordinator(IShardDirectory directory, IndexDefinitionStore definitions, AutoIndexes autoIndexes)
{
    /// <param name="numericSorts">The sort types an earlier page of the same query settled (<see cref="ShardPage.NumericSorts"/>), so later pages don't probe again.</param>
    public async Task<ShardPage> PageAsync(QueryRequest request, RqlQuery query, int take, int skip, string? after, bool wait, CancellationToken ct,
        IReadOnlyList<string>? numericSorts = null)
    {
        var index = query.From.IsIndex ? query.From.Name : await autoIndexes.IndexForAsync(query, ct);
        if (!definitions.Current.ContainsKey(index)) throw new QueryProblem(404, $"index '{index}' does not exist");
        if (after is not null && SearchCursor.Parse(after) is null) throw new QueryProblem(400, "cursor is not one this server gave out");
        var layout = await directory.LayoutAsync(ct);
        // Indexers joining (or a rebalance): a query that waits for non-stale results also waits for every partition to have an owner.
        var deadline = DateTime.UtcNow + TimeSpan.FromMilliseconds(Math.Clamp(request.TimeoutMs, 0, 300_000));
        while (wait && !layout.Complete && DateTime.UtcNow < deadline)
        {
            await Task.Delay(250, ct);
            layout = await directory.LayoutAsync(ct);
        }
        if (layout.Owners.Count == 0) throw new QueryProblem(503, $"no indexer holds shards of '{index}' yet");
        var single = layout.Owners.Count == 1;

        ShardQuery Ask(IReadOnlyList<int>? partitions, IReadOnlyList<string>? numeric) => new()
        {
            Query = request.Query, Index = index, Parameters = request.Parameters, After = after,
            Take = single ? take : skip + take, Skip = single ? skip : 0,
            Partitions = partitions, Target = layout.Target, WaitForNonStale = wait, TimeoutMs = request.TimeoutMs, NumericSorts = numeric,
        };
        var pages = await Task.WhenAll(layout.Owners.Select(o => o.Owner.SearchAsync(Ask(o.Partitions, numericSorts), ct)));
        var numeric = pages.SelectMany(p => p.NumericSorts).Distinct().ToList();
        if (pages.Any(p => p.NumericSorts.Count != numeric.Count))
            pages = await Task.WhenAll(layout.Owners.Select(o => o.Owner.SearchAsync(Ask(o.Partitions, numeric), ct)));

        var hits = single ? pages[0].Hits : ShardMerge.Page(pages.SelectMany(p => p.Hits), h => SearchCursor.Parse(h.Cursor)!, query, skip, take);
        return new ShardPage(pages.Sum(p => p.TotalResults), hits, !layout.Complete || pages.Any(p => p.IsStale),
            pages.Max(p => p.IndexEtag), numeric);
    }
}
