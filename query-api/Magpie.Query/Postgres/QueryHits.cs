using System.Runtime.CompilerServices;
using Magpie.Query.Rql;
using Magpie.Query.Shards;

namespace Magpie.Query.Postgres;

/// <summary>
/// Every hit of a query, page after page from one snapshot (a coordinator stream). A query's problem (<see cref="QueryProblem"/>),
/// however late it surfaces, is answered as its PostgreSQL error (<see cref="PgException.Of"/>) where the session answers every failed
/// statement.
/// </summary>
public static class QueryHits
{
    public static async IAsyncEnumerable<ShardHit> StreamAsync(QueryCoordinator coordinator, CoordinatorRequest request, RqlQuery query,
        [EnumeratorCancellation] CancellationToken ct = default)
    {
        await using var stream = await coordinator.StreamAsync(request, query, ct);
        await foreach (var page in stream.PagesAsync(ct))
            foreach (var hit in page.Hits) yield return hit;
    }
}
