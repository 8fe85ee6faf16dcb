using System.Runtime.CompilerServices;
using Magpie.Query.Rql;
using Magpie.Query.Shards;

namespace Magpie.Query.Postgres;

/// <summary>Every hit of a query, page after page from one snapshot (a coordinator stream), its problems as PostgreSQL errors.</summary>
public static class QueryHits
{
    public static async IAsyncEnumerable<ShardHit> StreamAsync(QueryCoordinator coordinator, CoordinatorRequest request, RqlQuery query,
        [EnumeratorCancellation] CancellationToken ct = default)
    {
        QueryStream stream;
        try { stream = await coordinator.StreamAsync(request, query, ct); }
        catch (QueryProblem e) { throw Problem(e); }
        await using var _ = stream;
        await using var pages = stream.PagesAsync(ct).GetAsyncEnumerator(ct);
        while (true)
        {
            try { if (!await pages.MoveNextAsync()) yield break; }
            catch (QueryProblem e) { throw Problem(e); }
            foreach (var hit in pages.Current.Hits) yield return hit;
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
