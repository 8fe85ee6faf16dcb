using System.Globalization;
using Magpie.Contracts;
using Magpie.Http;
using Magpie.Ingest.Partitions;
using Microsoft.AspNetCore.Http;

namespace Magpie.Ingest.Http;

/// <summary>
/// <c>GET /changes/relayed</c> on a partitioned store: the <c>magpie.changes</c> offsets holding everything stored now, each
/// partition's from its owner's relay (here, or asked with <c>?local=true</c>). A query waits for these before a non-stale answer.
/// </summary>
internal static class PartitionedRelays
{
    public static async Task<IResult> EndsAsync(HttpContext ctx, PartitionRouter router, TimeSpan timeout, bool localOnly)
    {
        var offsets = new Dictionary<string, long>();
        foreach (var partition in router.Partitions.Serving)
        {
            if (await partition.Relay.EndsAsync(timeout, ctx.RequestAborted) is not { } ends)
                return Problems.Of(ErrorKind.Unavailable, $"partition {partition.Number}'s relay has not published every stored change to magpie.changes in time (is Kafka reachable?)");
            foreach (var (p, end) in ends) offsets[p] = Math.Max(offsets.GetValueOrDefault(p), end);
        }
        if (!localOnly)
        {
            var query = string.Create(CultureInfo.InvariantCulture, $"/changes/relayed?local=true&timeoutMs={(long)timeout.TotalMilliseconds}");
            foreach (var (_, answer) in await router.AskMembersAsync(ctx, query))
                foreach (var end in answer.GetProperty("offsets").EnumerateObject())
                    offsets[end.Name] = Math.Max(offsets.GetValueOrDefault(end.Name), end.Value.GetInt64());
        }
        return Results.Ok(new { offsets });
    }
}
