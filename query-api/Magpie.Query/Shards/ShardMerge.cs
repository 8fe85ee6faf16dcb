using Magpie.Contracts.Search;
using Magpie.Query.Rql;

namespace Magpie.Query.Shards;

/// <summary>
/// Hits of one query from several shards put in the query's order: by cursor (the order-by values in their
/// directions, then the document id), then skipped and cut to the page. Used by an owner over its local
/// shards and by the coordinator over owners.
/// </summary>
public static class ShardMerge
{
    public static List<T> Page<T>(IEnumerable<T> hits, Func<T, SearchCursor> cursorOf, RqlQuery query, int skip, int take)
    {
        var directions = query.OrderBy.Select(o => o.Descending).ToList();
        var ordered = hits.Select(h => (Hit: h, Cursor: cursorOf(h))).ToList();
        ordered.Sort((a, b) => SearchCursor.Compare(a.Cursor, b.Cursor, directions));
        return ordered.Skip(skip).Take(take).Select(h => h.Hit).ToList();
    }
}
