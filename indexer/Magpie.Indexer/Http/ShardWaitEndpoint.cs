using Magpie.Http;
using Magpie.Indexer.Indexing;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.Indexer.Http;

/// <summary>What ingest asks an indexer after a write with <c>?waitForIndexes=true</c>: partition → the offset every index must reach.</summary>
public sealed record ShardWait(Dictionary<int, long> Target, int TimeoutMs);

/// <summary>
/// Kafka mode: <c>POST /shards/wait</c> answers <c>{ "reached": bool }</c> once every index on this indexer has
/// seen the given partitions up to the given offsets (map indexes on their own shards; the reduce side of map/reduce
/// indexes through the map stages' watermarks), or when the timeout says it has not.
/// </summary>
public static class ShardWaitEndpoint
{
    public static IEndpointRouteBuilder MapShardWait(this IEndpointRouteBuilder app)
    {
        app.MapPost("/shards/wait", async (ShardWait wait, IndexRegistry registry, CancellationToken ct) =>
        {
            if (wait.Target is null || wait.Target.Count == 0) return Problems.BadRequest("target must name partitions and offsets");
            var timeout = TimeSpan.FromMilliseconds(Math.Clamp(wait.TimeoutMs, 0, 300_000));
            return Results.Json(new { reached = await registry.WaitForPositionsAsync(wait.Target, timeout, ct) });
        });
        return app;
    }
}
