using System.Globalization;
using Magpie.Contracts.Indexes;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace Magpie.Ingest.Http;

/// <summary>
/// <c>?waitForIndexes=true</c> on a write: answer once every index has processed its etag, bounded by
/// <c>waitForIndexesTimeoutMs</c> (default 15 s). The write is durable either way; on timeout the answer
/// says so in <c>Magpie-Indexes: stale</c>.
/// </summary>
internal static class IndexWait
{
    public const string Header = "Magpie-Indexes";

    public static async Task AfterWriteAsync(HttpContext ctx, long? etag)
    {
        if (etag is not { } e || !string.Equals(ctx.Request.Query["waitForIndexes"], "true", StringComparison.OrdinalIgnoreCase)) return;
        if (ctx.RequestServices.GetService<IIndexWaiter>() is not { } waiter) return;
        var timeout = int.TryParse(ctx.Request.Query["waitForIndexesTimeoutMs"], NumberStyles.None, CultureInfo.InvariantCulture, out var ms) ? ms : 15_000;
        var wait = TimeSpan.FromMilliseconds(Math.Clamp(timeout, 0, 300_000));
        var done = RoutedStore.PartitionOf(ctx) is { } partition && waiter is Kafka.KafkaIndexWaiter kafka
            ? await kafka.WaitForEtagAsync(partition.Relay, e, wait, ctx.RequestAborted)
            : await waiter.WaitForEtagAsync(e, wait, ctx.RequestAborted);
        ctx.Response.Headers[Header] = done ? "current" : "stale";
    }
}
