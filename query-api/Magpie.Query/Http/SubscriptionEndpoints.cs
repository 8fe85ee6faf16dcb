using Magpie.Http;
using Magpie.Query.Subscriptions;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.Query.Http;

/// <summary>What a worker acknowledges: the batch it processed.</summary>
public sealed record SubscriptionAck(string? Worker, long BatchId);

/// <summary>
/// Data subscriptions, long-poll protocol: <c>POST /subscriptions</c> creates one; a worker asks
/// <c>GET /subscriptions/{name}/next?worker=W&amp;strategy=OpenIfFree|TakeOver|WaitForFree&amp;maxDocs=100&amp;waitMs=30000</c>
/// (200 with <c>{ "batchId", "items" }</c>, or 204 when nothing came within waitMs; 409 when another worker holds it),
/// processes the batch (<c>POST /subscriptions/{name}/heartbeat</c> <c>{ "worker" }</c> keeps the lease meanwhile), then
/// <c>POST /subscriptions/{name}/ack</c> <c>{ "worker", "batchId" }</c> (acking the same batch again is a no-op; 410 when the batch is
/// no longer handed out — server restarted, lease ran out — and will come again; 409 when another worker holds it). Until the ack, every
/// <c>next</c> returns the same batch. <c>GET</c> shows position, lag and the connected worker; <c>DELETE</c> removes it.
/// </summary>
public static class SubscriptionEndpoints
{
    public static IEndpointRouteBuilder MapSubscriptionEndpoints(this IEndpointRouteBuilder app)
    {
        var group = app.MapGroup("/subscriptions");
        group.MapPost("", async (SubscriptionDefinition definition, SubscriptionRegistry registry, CancellationToken ct) =>
        {
            try
            {
                var s = await registry.CreateAsync(definition, ct);
                return Results.Created($"/subscriptions/{Uri.EscapeDataString(s.State.Definition.Name)}", Describe(s));
            }
            catch (SubscriptionException e) { return Problems.Of(e.Kind, e.Message); }
        });
        group.MapGet("", (SubscriptionRegistry registry) => Results.Json(registry.All.Select(Describe).OfType<object>()));
        group.MapGet("/{name}", (string name, SubscriptionRegistry registry) =>
            registry.Get(name) is { } s && Describe(s) is { } d ? Results.Json(d) : Missing(name));
        group.MapDelete("/{name}", async (string name, SubscriptionRegistry registry, CancellationToken ct) =>
        {
            try { return await registry.DeleteAsync(name, ct) ? Results.NoContent() : Missing(name); }
            catch (SubscriptionException e) { return Problems.Of(e.Kind, e.Message); }
        });
        group.MapGet("/{name}/next", async (string name, string? worker, string? strategy, int? maxDocs, int? waitMs, SubscriptionRegistry registry, CancellationToken ct) =>
        {
            if (registry.Get(name) is not { } s) return Missing(name);
            if (string.IsNullOrWhiteSpace(worker)) return Problem(400, "worker (a name for this worker) is required");
            if (!Enum.TryParse<OpeningStrategy>(strategy ?? nameof(OpeningStrategy.OpenIfFree), ignoreCase: true, out var opening))
                return Problem(400, "strategy must be OpenIfFree, TakeOver or WaitForFree");
            if (maxDocs is < 1 or > 10_000) return Problem(400, "maxDocs must be 1 to 10000");
            try
            {
                var batch = await s.NextAsync(worker, opening, maxDocs ?? 100, TimeSpan.FromMilliseconds(Math.Clamp(waitMs ?? 30_000, 0, 120_000)), ct);
                return batch is null ? Results.NoContent() : Results.Json(new { batchId = batch.Id, items = batch.Items, includes = batch.Includes });
            }
            catch (SubscriptionInUseException e) { return Problem(409, e.Message); }
            catch (SubscriptionGoneException e) { return Problem(404, e.Message); }
            catch (SubscriptionException e) { return Problems.Of(e.Kind, e.Message); }
        });
        group.MapPost("/{name}/ack", async (string name, SubscriptionAck ack, SubscriptionRegistry registry, CancellationToken ct) =>
        {
            if (registry.Get(name) is not { } s) return Missing(name);
            try
            {
                await s.AckAsync(ack.Worker ?? "", ack.BatchId, ct);
                return Results.NoContent();
            }
            catch (SubscriptionInUseException e) { return Problem(409, e.Message); }
            catch (SubscriptionBatchGoneException e) { return Problem(410, e.Message); }
            catch (SubscriptionGoneException e) { return Problem(404, e.Message); }
            catch (SubscriptionException e) { return Problems.Of(e.Kind, e.Message); }
        });
        // A worker still processing its batch keeps its lease (clients send this every third of the lease).
        group.MapPost("/{name}/heartbeat", async (string name, SubscriptionAck ack, SubscriptionRegistry registry, CancellationToken ct) =>
        {
            if (registry.Get(name) is not { } s) return Missing(name);
            try
            {
                await s.RenewAsync(ack.Worker ?? "", ct);
                return Results.NoContent();
            }
            catch (SubscriptionInUseException e) { return Problem(409, e.Message); }
            catch (SubscriptionGoneException e) { return Problem(404, e.Message); }
            catch (SubscriptionException e) { return Problems.Of(e.Kind, e.Message); }
        });
        return app;
    }

    /// <summary>Null when the subscription was deleted (through another process) while it was described.</summary>
    private static object? Describe(Subscription s)
    {
        try { return Described(s); }
        catch (SubscriptionGoneException) { return null; }
    }

    private static object Described(Subscription s) => new
    {
        s.State.Definition,
        position = s.State.Position,
        acknowledgedDocuments = s.State.Acked,
        lastBatchId = s.State.Delivered,
        lag = s.Lag(),
        worker = s.Worker,
        pendingBatchId = s.PendingId,
    };

    private static IResult Missing(string name) => Problem(404, $"subscription '{name}' does not exist");

    private static IResult Problem(int status, string detail) => Problems.Of(status, detail);
}
