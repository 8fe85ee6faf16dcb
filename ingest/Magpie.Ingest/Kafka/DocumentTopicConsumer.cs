using System.Text;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Documents;
using Magpie.Ingest.Documents;
using Magpie.Kafka;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// Consumes <c>magpie.documents</c> (key = id; value = document, or a JSON Patch when <c>magpie-op: patch</c>) into the one store.
/// A batch of messages becomes one store write (each message stands alone); offsets are committed only
/// after the FasterLog commit and after any dead letters were confirmed, so nothing is lost, and the store
/// records each partition's applied offsets with the writes, so nothing is applied twice. A message
/// that can't be applied goes to <c>magpie.documents.dlq</c> with the reason in headers and never blocks
/// its partition (<see cref="InputBatches"/>).
/// </summary>
public sealed class DocumentTopicConsumer(DocumentStore store, InputBatches input, IngestOptions options, ILogger<DocumentTopicConsumer> logger,
    InputProgress? progress = null) : BackgroundService
{
    protected override Task ExecuteAsync(CancellationToken stoppingToken) => input.RunAsync(Run, stoppingToken);

    private void Run(IProducer<byte[], byte[]> deadLetters, CancellationToken ct)
    {
        using var consumer = KafkaClients.BuildConsumer<byte[], byte[]>(KafkaClients.Consumer(options.KafkaBootstrapServers!, options.ConsumerGroup), logger);
        consumer.Subscribe(Topics.Documents);
        logger.LogInformation("consuming {Topic} as group {Group}", Topics.Documents, options.ConsumerGroup);
        try
        {
            while (!ct.IsCancellationRequested)
            {
                var messages = input.ConsumeBatch(consumer, ct);
                if (messages.Count == 0) continue;
                input.ApplyAsync(messages, store, null, deadLetters, ct).GetAwaiter().GetResult();
                var applied = messages.GroupBy(m => m.TopicPartition).Select(g => new TopicPartitionOffset(g.Key, g.Max(m => m.Offset.Value) + 1)).ToList();
                consumer.Commit(applied);
                // Read your writes through Kafka: everything before these offsets is in the store, the newest at the store's last etag.
                var etag = store.LastEtag;
                foreach (var a in applied) progress?.Applied(a.Partition.Value, a.Offset.Value, etag);
            }
        }
        finally
        {
            consumer.Close();
        }
    }
}

/// <summary>Turns one input-topic message into a write command, or says why it can't be one.</summary>
public static class InputMessage
{
    private static readonly UTF8Encoding StrictUtf8 = new(false, throwOnInvalidBytes: true);

    public static WriteCommand? ToCommand(Message<byte[], byte[]> message, int maxDepth, out string? reason)
    {
        reason = null;
        string id;
        try { id = message.Key is { Length: > 0 } k ? StrictUtf8.GetString(k) : ""; }
        catch (DecoderFallbackException) { reason = "the key (document id) is not valid UTF-8"; return null; }
        if (id.Length == 0) { reason = "the message has no key; the key is the document id"; return null; }
        if (DocumentId.Validate(id) is { } idError) { reason = idError; return null; }

        var op = Header(message, Topics.Headers.Op)?.ToLowerInvariant() ?? "put";
        long? ifMatch = null;
        if (Header(message, Topics.Headers.IfMatch) is { } ifMatchText)
        {
            if (!Etag.TryParse(ifMatchText, out var e)) { reason = $"header {Topics.Headers.IfMatch} is not an etag: '{ifMatchText}'"; return null; }
            ifMatch = e;
        }
        var collection = Header(message, Topics.Headers.Collection);
        switch (op)
        {
            case "put":
                if (message.Value is not { Length: > 0 } doc) { reason = "a put needs a JSON document as the message value"; return null; }
                if (DocumentJson.ValidateObject(doc, maxDepth) is { } jsonError) { reason = jsonError; return null; }
                return WriteCommand.Put(id, doc, ifMatch, string.IsNullOrEmpty(collection) ? null : collection, parsedDepth: maxDepth);
            case "patch":
                if (message.Value is not { Length: > 0 } patchJson) { reason = "a patch needs a JSON Patch array as the message value"; return null; }
                var patch = DocumentPatcher.Parse(patchJson, out var patchError, maxDepth);
                if (patch is null) { reason = patchError; return null; }
                return WriteCommand.ApplyPatch(id, patch, ifMatch);
            case "delete":
                return WriteCommand.Delete(id, ifMatch);
            default:
                reason = $"unknown {Topics.Headers.Op} '{op}' (expected put, patch or delete)";
                return null;
        }
    }

    private static string? Header(Message<byte[], byte[]> message, string name) =>
        message.Headers is { } h && h.TryGetLastBytes(name, out var bytes) ? Encoding.UTF8.GetString(bytes) : null;
}
