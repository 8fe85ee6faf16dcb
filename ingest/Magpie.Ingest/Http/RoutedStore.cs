using Magpie.Contracts.Documents;
using Magpie.Ingest.Documents;
using Magpie.Ingest.Kafka;
using Magpie.Ingest.Partitions;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace Magpie.Ingest.Http;

/// <summary>
/// The store a document request works on: the one store, or with a partitioned store the partition of the request's id, which
/// the endpoint filter <see cref="RouteAsync"/> finds (here under a lease, or the owner's answer forwarded).
/// </summary>
internal static class RoutedStore
{
    private const string Key = "magpie.store-partition";

    public static DocumentStore Of(HttpContext ctx) =>
        ctx.Items[Key] is StorePartition partition ? partition.Store : ctx.RequestServices.GetRequiredService<DocumentStore>();

    public static StorePartition? PartitionOf(HttpContext ctx) => ctx.Items[Key] as StorePartition;

    /// <summary>The request works on <paramref name="partition"/> (held under a lease for it).</summary>
    public static void Use(HttpContext ctx, StorePartition partition) => ctx.Items[Key] = partition;

    public static PartitionRouter? Router(HttpContext ctx) => ctx.RequestServices.GetService<PartitionRouter>();

    /// <summary>The id a <c>/docs</c> request names (route or <c>?id=</c>); requests without one (browsing) pass through.</summary>
    public static async ValueTask<object?> RouteAsync(EndpointFilterInvocationContext invocation, EndpointFilterDelegate next)
    {
        var ctx = invocation.HttpContext;
        if (Router(ctx) is not { } router) return await next(invocation);
        var id = ctx.Request.RouteValues["id"] as string ?? (string?)ctx.Request.Query["id"];
        if (id is null || DocumentId.Validate(id) is not null) return await next(invocation);   // the handler answers what is wrong
        return await ServeAsync(ctx, router, id, () => next(invocation).AsTask());
    }

    /// <summary>Runs <paramref name="local"/> on the partition holding <paramref name="id"/> when this process has it, else forwards.</summary>
    public static Task<object?> ServeAsync(HttpContext ctx, PartitionRouter router, string id, Func<Task<object?>> local, string? pathAndQuery = null) =>
        router.ServeAsync(ctx, router.Partitions.PartitionOf(id), async lease =>
        {
            Use(ctx, lease.Partition);
            return await local();
        }, pathAndQuery);

    /// <summary>
    /// After a write: with Kafka, waits (up to <see cref="IngestOptions.KafkaAckTimeout"/>) until Kafka holds the change, and says
    /// in <c>Magpie-Durability</c> what holds it: <c>kafka</c> (the log and Kafka), <c>log</c> (only this process's log, published
    /// when Kafka answers again). Embedded, the log is the store: no header.
    /// </summary>
    public static async Task AcknowledgeAsync(HttpContext ctx, long? etag)
    {
        var relay = PartitionOf(ctx)?.Relay ?? ctx.RequestServices.GetService<ChangeRelay>();
        if (relay is null || etag is not { } e) return;
        var timeout = ctx.RequestServices.GetRequiredService<IngestOptions>().KafkaAckTimeout;
        var held = timeout > TimeSpan.Zero && await relay.PublishedAsync(e, timeout, ctx.RequestAborted) is not null;
        ctx.Response.Headers[DurabilityHeader] = held ? "kafka" : "log";
    }

    public const string DurabilityHeader = "Magpie-Durability";
}
