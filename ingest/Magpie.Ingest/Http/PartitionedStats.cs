using System.Text.Json;
using Magpie.Ingest.Partitions;
using Microsoft.AspNetCore.Http;

namespace Magpie.Ingest.Http;

/// <summary>
/// <c>GET /stats</c> on a partitioned store: documents and collection counts summed over every partition's owner, and each
/// partition's own figures (its etags are its own: a change's position is its partition and etag). <c>?local=true</c>: only
/// the partitions this process holds (what the process asked sums).
/// </summary>
internal static class PartitionedStats
{
    public static async Task<IResult> GetAsync(HttpContext ctx, PartitionRouter router, bool localOnly)
    {
        var parts = router.Partitions.Serving.Select(p => (Partition: p, Stats: p.Store.Stats())).Select(p => new PartitionFigures(
            p.Partition.Number, p.Stats.Documents, p.Stats.Collections, p.Stats.LastEtag, router.Url)).ToList();
        if (!localOnly)
            foreach (var (url, answer) in await router.AskMembersAsync(ctx, "/stats?local=true"))
                foreach (var part in answer.GetProperty("partitions").EnumerateArray())
                    parts.Add(new PartitionFigures(part.GetProperty("partition").GetInt32(), part.GetProperty("documents").GetInt64(),
                        part.GetProperty("collections").Deserialize<Dictionary<string, long>>()!, part.GetProperty("lastEtag").GetInt64(), url));
        parts = [.. parts.GroupBy(p => p.Partition).Select(g => g.First()).OrderBy(p => p.Partition)];
        var collections = parts.SelectMany(p => p.Collections).GroupBy(c => c.Key, StringComparer.OrdinalIgnoreCase)
            .ToDictionary(g => g.Key, g => g.Sum(c => c.Value), StringComparer.OrdinalIgnoreCase);
        return Results.Ok(new
        {
            documents = parts.Sum(p => p.Documents),
            collections,
            partitionCount = router.Partitions.Count,
            // Partitions no process answered for (moving, or their owner is down): the sums leave them out.
            missing = localOnly ? null : Enumerable.Range(0, router.Partitions.Count).Except(parts.Select(p => p.Partition)).ToList(),
            partitions = parts.Select(p => new { partition = p.Partition, documents = p.Documents, collections = p.Collections, lastEtag = p.LastEtag, owner = p.Owner }),
        });
    }

    private sealed record PartitionFigures(int Partition, long Documents, IReadOnlyDictionary<string, long> Collections, long LastEtag, string? Owner);
}
