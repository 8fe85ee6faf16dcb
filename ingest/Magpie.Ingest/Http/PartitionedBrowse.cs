using System.Globalization;
using System.Text.Json;
using Magpie.Http;
using Magpie.Ingest.Partitions;
using Microsoft.AspNetCore.Http;

namespace Magpie.Ingest.Http;

/// <summary>
/// <c>GET /docs?collection=</c> on a partitioned store: the partitions one after another, each in its log's order, from its
/// owner. The cursor names the partition and the position in it (<c>3.81920</c>), so paging goes on across owners and
/// takeovers (a rebuilt partition starts again at its beginning: pages may then repeat documents, never skip one).
/// <c>?partition=</c> asks for one partition's page (what the process paging asks an owner).
/// </summary>
internal static class PartitionedBrowse
{
    public static async Task<IResult> PageAsync(HttpContext ctx, PartitionRouter router, string? collection, int start, int size, string? cursor, int? partition)
    {
        if (partition is { } only)
        {
            if (only < 0 || only >= router.Partitions.Count) return Problems.BadRequest($"partition must be between 0 and {router.Partitions.Count - 1}");
            return (IResult)(await router.ServeAsync(ctx, only, async lease => await DocumentEndpoints.BrowseAsync(ctx, lease.Partition.Store, collection, 0, size, cursor)))!;
        }
        if (start > 0) return Problems.BadRequest("start is not served by a partitioned store, whose documents live in several logs: page with nextCursor");
        var (at, from) = (0, 0L);
        if (cursor is not null)
        {
            var parts = cursor.Split('.');
            if (parts.Length != 2 || !int.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out at) || at >= router.Partitions.Count
                || !long.TryParse(parts[1], NumberStyles.None, CultureInfo.InvariantCulture, out from))
                return Problems.BadRequest("cursor is not one this server returned");
        }
        for (; at < router.Partitions.Count; (at, from) = (at + 1, 0))
        {
            var query = $"/docs?partition={at}&pageSize={size}&cursor={from}" + (string.IsNullOrEmpty(collection) ? "" : "&collection=" + Uri.EscapeDataString(collection));
            if (await PartitionPageAsync(ctx, router, at, query) is not { } page)
            {
                ctx.Response.Headers.RetryAfter = "1";
                return Problems.Of(Contracts.ErrorKind.Unavailable, $"partition {at} of the store has no ingest process serving it now; try again");
            }
            var results = page.GetProperty("results");
            var next = page.GetProperty("nextCursor").GetString();
            if (results.GetArrayLength() == 0 && next is null) continue;
            var nextCursor = next is not null ? $"{at}.{next}" : at + 1 < router.Partitions.Count ? $"{at + 1}.0" : null;
            return new RawPage(results, nextCursor);
        }
        return new RawPage(null, null);
    }

    /// <summary>One partition's page, asked of its owner over HTTP (this process too, when it holds it: one path for both).</summary>
    private static async Task<JsonElement?> PartitionPageAsync(HttpContext ctx, PartitionRouter router, int partition, string query)
    {
        var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(15);
        for (var refresh = false; ; refresh = true)
        {
            if (await router.OwnerOfAsync(partition, refresh) is { } owner && await router.AskAsync(ctx, owner, query) is { } answer) return answer;
            if (DateTime.UtcNow > deadline) return null;
            await Task.Delay(200, ctx.RequestAborted);
        }
    }

    /// <summary>Documents as their owners wrote them (with metadata), passed on unchanged.</summary>
    private sealed class RawPage(JsonElement? results, string? nextCursor) : IResult
    {
        public async Task ExecuteAsync(HttpContext ctx)
        {
            ctx.Response.ContentType = "application/json; charset=utf-8";
            await using var w = new Utf8JsonWriter(ctx.Response.Body);
            w.WriteStartObject();
            w.WriteStartArray("results");
            if (results is { } r)
                foreach (var doc in r.EnumerateArray()) w.WriteRawValue(doc.GetRawText(), skipInputValidation: true);
            w.WriteEndArray();
            if (nextCursor is not null) w.WriteString("nextCursor", nextCursor);
            else w.WriteNull("nextCursor");
            w.WriteEndObject();
        }
    }
}
