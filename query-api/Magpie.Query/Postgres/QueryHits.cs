using System.Runtime.CompilerServices;
using Magpie.Query.Http;
using Magpie.Query.Rql;
using Magpie.Query.Shards;

namespace Magpie.Query.Postgres;

/// <summary>Every hit of a query, page after page from one snapshot (a coordinator stream), its problems as PostgreSQL errors.</summary>
public static class QueryHits
{
    private const int Page = 1000;

    public static async IAsyncEnumerable<ShardHit> StreamAsync(QueryCoordinator coordinator, QueryRequest request, RqlQuery query,
        [EnumeratorCancellation] CancellationToken ct = default)
    {
        var remaining = query.Limit ?? long.MaxValue;
        QueryStream stream;
        try { stream = await coordinator.StreamAsync(request, query, (int)Math.Min(Page, remaining), ct); }
        catch (QueryProblem e) { throw Problem(e); }
        await using var _ = stream;
        var page = stream.First;
        while (true)
        {
            foreach (var hit in page.Hits) yield return hit;
            remaining -= page.Hits.Count;
            if (remaining <= 0 || page.Hits.Count < Page) yield break;
            try { page = await stream.NextAsync(page.Hits[^1].Cursor, (int)Math.Min(Page, remaining), ct); }
            catch (QueryProblem e) { throw Problem(e); }
        }
    }

    public static PgException Problem(QueryProblem e) => e.Status switch
    {
        404 => new PgException(PgException.UndefinedTable, e.Message),
        400 => new PgException(PgException.SyntaxError, e.Message),
        503 => new PgException(PgException.ServiceUnavailable, e.Message),
        _ => new PgException(PgException.InternalError, e.Message),
    };
}
