using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.Http;
using Magpie.Ingest.Partitions;
using Microsoft.AspNetCore.Http;

namespace Magpie.Ingest.Http;

/// <summary>
/// <c>POST /message_writes</c> on a partitioned store: each message goes to the partition its writes belong to, applied there
/// all or nothing with its id in that partition's ledger (by the owner, here or forwarded). A message whose writes are
/// documents of several partitions is refused with the reason (its writes could not be all or nothing); a message with no write
/// is recorded in the partition its id would have. A part whose owner cannot be reached fails the request: the sink sends the
/// batch again, and the ledgers skip what was applied.
/// </summary>
internal static class PartitionedMessageWrites
{
    public static async Task<IResult> RunAsync(HttpContext ctx, PartitionRouter router, string ledger, IReadOnlyList<MessageWrites> messages)
    {
        var outcomes = new MessageOutcome?[messages.Count];
        var parts = new Dictionary<int, List<int>>();
        for (var i = 0; i < messages.Count; i++)
        {
            var partitions = messages[i].Writes.Select(w => router.Partitions.PartitionOf(w.Id)).Distinct().Order().ToList();
            if (partitions.Count > 1)
            {
                outcomes[i] = new MessageOutcome(messages[i].MessageId, MessageWriteResult.Refused,
                    $"its writes are documents of partitions {string.Join(", ", partitions)} of a partitioned store; a message is applied all or nothing only within one partition");
                continue;
            }
            var partition = partitions.Count == 1 ? partitions[0] : router.Partitions.PartitionOf(messages[i].MessageId);
            (parts.TryGetValue(partition, out var list) ? list : parts[partition] = []).Add(i);
        }
        var answers = await Task.WhenAll(parts.Select(async part =>
        {
            var subset = part.Value.Select(i => messages[i]).ToList();
            var body = new System.Buffers.ArrayBufferWriter<byte>(4096);
            using (var w = new Utf8JsonWriter(body)) MessageWritesJson.WriteRequest(w, ledger, subset);
            var answer = await router.ServePartAsync(ctx, part.Key, "/message_writes", body.WrittenSpan.ToArray(),
                async (_, lease) => Results(await lease.Partition.Messages.WriteAsync(ledger, subset, ctx.RequestAborted)));
            return (Indexes: part.Value, Answer: answer);
        }));
        foreach (var (indexes, answer) in answers)
        {
            if (answer.Status != StatusCodes.Status200OK)
                return Problems.Of(answer.Status, $"a partition's messages were not applied: {(answer.Body.ValueKind == JsonValueKind.Object && answer.Body.TryGetProperty("detail", out var d) ? d.GetString() : answer.Status.ToString())}; send the batch again (what was applied is skipped)");
            var results = MessageWritesJson.ReadResults(answer.Body);
            for (var i = 0; i < indexes.Count; i++) outcomes[indexes[i]] = results[i];
        }
        return Results(outcomes.Select(o => o!).ToList());
    }

    private static IResult Results(IReadOnlyList<MessageOutcome> outcomes) => Microsoft.AspNetCore.Http.Results.Stream(async stream =>
    {
        await using var w = new Utf8JsonWriter(stream);
        MessageWritesJson.WriteResults(w, outcomes);
    }, "application/json");
}
