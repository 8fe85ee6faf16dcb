using System.Text;
using System.Text.Json;
using Magpie.Http;
using Magpie.Ingest.Documents;
using Magpie.Ingest.Partitions;
using Microsoft.AspNetCore.Http;

namespace Magpie.Ingest.Http;

/// <summary>
/// <c>POST /bulk_docs</c> on a partitioned store. Commands of one partition are applied all or nothing, as on a single store, by
/// the partition's owner (the answer is exactly a single store's). Commands spanning partitions are split by partition, each
/// part all or nothing on its own, as RavenDB's sharded batches are: 200 when every part was applied, else 207 with every
/// command's outcome — its etag; or the status and problem of its refusal; or 424 when another command of its part was
/// refused, so it was not applied and may be sent again — and each part's status, so a client knows what was written.
/// </summary>
internal static class PartitionedBulk
{
    public static async Task<IResult> RunAsync(HttpContext ctx, PartitionRouter router, int maxDepth)
    {
        var (body, problem) = await RequestBody.ReadAsync(ctx.Request, ctx.RequestAborted);
        if (problem is not null) return problem;
        byte[] bytes;
        IReadOnlyList<WriteCommand> commands;
        string? error;
        var elements = new List<string>();
        using (body)
        {
            bytes = body!.Span.ToArray();
            commands = BulkCommandParser.Parse(body.Memory, maxDepth, out error, elements);
        }
        if (error is not null) return Problems.BadRequest(error);
        var parts = commands.Select((command, index) => (command, index)).GroupBy(c => router.Partitions.PartitionOf(c.command.Id)).ToList();
        if (parts.Count <= 1)
        {
            var partition = parts.Count == 0 ? 0 : parts[0].Key;
            return (IResult)(await router.ServeAsync(ctx, partition, async lease => await WriteAsync(ctx, lease, commands), body: bytes))!;
        }
        var outcomes = await Task.WhenAll(parts.Select(part => PartAsync(ctx, router, part.Key, [.. part.Select(c => c.command)], [.. part.Select(c => c.index)], elements)));
        var results = new object?[commands.Count];
        foreach (var part in outcomes)
            for (var i = 0; i < part.Indexes.Count; i++)
            {
                var command = commands[part.Indexes[i]];
                results[part.Indexes[i]] = part.Results?[i] ?? (part.RefusedAt is { } at && at != i
                    // Refused as a whole because of another of its commands: not applied, and nothing wrong with it.
                    ? new { id = command.Id, method = Method(command), status = StatusCodes.Status424FailedDependency, error = (object?)new { detail = $"not applied: command {part.Indexes[at]} of the same partition was refused" } }
                    : new { id = command.Id, method = Method(command), status = part.Status, error = (object?)part.Error });
            }
        var applied = outcomes.All(o => o.Status == StatusCodes.Status200OK);
        var durable = outcomes.Where(o => o.Durability is not null).Select(o => o.Durability).ToList();
        if (durable.Count > 0) ctx.Response.Headers[RoutedStore.DurabilityHeader] = durable.All(d => d == "kafka") ? "kafka" : "log";
        var answer = new
        {
            results,
            partitions = outcomes.OrderBy(o => o.Partition).Select(o => new { partition = o.Partition, status = o.Status, commands = o.Indexes.Count, error = o.Error }),
        };
        return applied ? Results.Ok(answer) : Results.Json(answer, statusCode: StatusCodes.Status207MultiStatus);
    }

    private static string Method(WriteCommand command) => command.Method.ToString().ToUpperInvariant();

    /// <summary>One partition's part: applied here under a lease, or sent to its owner as a bulk request of its own.</summary>
    private static async Task<PartOutcome> PartAsync(HttpContext ctx, PartitionRouter router, int partition, List<WriteCommand> commands, List<int> indexes, List<string> elements)
    {
        var body = Encoding.UTF8.GetBytes("[" + string.Join(",", indexes.Select(i => elements[i])) + "]");
        var answer = await router.ServePartAsync(ctx, partition, "/bulk_docs", body, (part, lease) => WriteAsync(part, lease, commands));
        var durability = answer.Headers[RoutedStore.DurabilityHeader].ToString() is { Length: > 0 } d ? d : null;
        if (answer.Status == StatusCodes.Status200OK && answer.Body.TryGetProperty("results", out var results))
            return new PartOutcome(partition, answer.Status, indexes, [.. results.EnumerateArray().Select(r => (object?)r.Clone())], null, durability);
        var refusedAt = answer.Body.ValueKind == JsonValueKind.Object && answer.Body.TryGetProperty("index", out var index) && index.ValueKind == JsonValueKind.Number
            ? index.GetInt32() : (int?)null;
        return new PartOutcome(partition, answer.Status, indexes, null, answer.Body, durability, refusedAt);
    }

    private static async Task<object?> WriteAsync(HttpContext ctx, PartitionLease lease, IReadOnlyList<WriteCommand> commands)
    {
        RoutedStore.Use(ctx, lease.Partition);
        return await DocumentEndpoints.BulkWriteAsync(ctx, lease.Partition.Store, commands);
    }

    /// <param name="RefusedAt">The part's command (its index within the part) whose refusal refused the part.</param>
    private sealed record PartOutcome(int Partition, int Status, List<int> Indexes, List<object?>? Results, JsonElement? Error, string? Durability, int? RefusedAt = null);
}
