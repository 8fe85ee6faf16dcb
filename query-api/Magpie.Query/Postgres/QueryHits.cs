using System.Runtime.CompilerServices;
using Magpie.Query.Http;
using Magpie.Query.Rql;
using Magpie.Query.Shards;

namespace Magpie.Query.Postgres;

/// <summary>Every hit of a query, page after page from one snapshot (a coordinator stream), its problems as PostgreSQL errors.</summary>
public static class QueryHits
{
    public static async IAsyncEnumerable<ShardHit> StreamAsync(QueryCoordinator coordinator, QueryRequest request, RqlQuery query,
        [EnumeratorCancellation] CancellationToken ct = default)
    {
        var remaining = query.Limit ?? long.MaxValue;
        var asked = (int)Math.Min(QueryStream.FirstPageSize, remaining);
        QueryStream stream;
        try { stream = await coordinator.StreamAsync(request, query, asked, ct); }
        catch (QueryProblem e) { throw Problem(e); }
        await using var _ = stream;
        var page = stream.First;
        while (true)
        {
            foreach (var hit in page.Hits) yield return hit;
            remaining -= page.Hits.Count;
            if (remaining <= 0 || page.Hits.Count < asked) yield break;
            asked = (int)Math.Min(QueryStream.NextPageSize(query), remaining);
            try { page = await stream.NextAsync(page.Hits[^1].Cursor, asked, ct); }
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
