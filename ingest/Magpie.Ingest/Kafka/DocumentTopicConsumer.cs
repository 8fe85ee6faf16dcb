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
/// Consumes <c>magpie.documents</c> (key = id; value = document, or a JSON Patch when <c>magpie-op: patch</c>).
/// A batch of messages becomes one store write (each message stands alone); offsets are committed only
/// after the FasterLog commit and after any dead letters were confirmed, so nothing is lost, and the store
/// records each partition's applied offsets with the writes, so nothing is applied twice. A message
/// that can't be applied goes to <c>magpie.documents.dlq</c> with the reason in headers and never blocks
/// its partition.
/// </summary>
public sealed class DocumentTopicConsumer(DocumentStore store, IngestOptions options, ILogger<DocumentTopicConsumer> logger, InputProgress? progress = null) : BackgroundService
{
    private long _applied, _deadLettered;

    /// <summary>What the consumer has done, for <c>GET /stats/pipeline</c>.</summary>
    public object Status() => new { applied = Interlocked.Read(ref _applied), deadLettered = Interlocked.Read(ref _deadLettered) };

    /// <summary>
    /// Runs on its own thread: Confluent's consumer API blocks (Consume, Commit), and blocking thread-pool
    /// threads starves the HTTP API exactly when Kafka is unreachable.
    /// </summary>
    protected override Task ExecuteAsync(CancellationToken stoppingToken) =>
        Task.Factory.StartNew(() => Loop(stoppingToken), stoppingToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);

    private void Loop(CancellationToken stoppingToken) =>
        SupervisedLoop.Run(Run, options.Retry.Start(), (e, delay) =>
            logger.LogWarning("input topic consumer stopped ({Error}); uncommitted messages will be re-read, restarting in {Delay}", e.Message, delay), stoppingToken);

    private void Run(CancellationToken ct)
    {
        var servers = options.KafkaBootstrapServers!;
        TopicAdmin.EnsureAsync(servers, TopicAdmin.DefaultTopics(options.KafkaPartitions, options.KafkaReplicationFactor), ct).GetAwaiter().GetResult();
        using var consumer = KafkaClients.BuildConsumer<byte[], byte[]>(KafkaClients.Consumer(servers, options.ConsumerGroup), logger);
        using var deadLetters = KafkaClients.BuildProducer<byte[], byte[]>(KafkaClients.Producer(servers, "magpie-ingest-dlq"), logger);
        consumer.Subscribe(Topics.Documents);
        logger.LogInformation("consuming {Topic} as group {Group}", Topics.Documents, options.ConsumerGroup);
        try
        {
            while (!ct.IsCancellationRequested)
            {
                var messages = ConsumeBatch(consumer, ct);
                if (messages.Count == 0) continue;
                ApplyAsync(messages, deadLetters, ct).GetAwaiter().GetResult();
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

    private List<ConsumeResult<byte[], byte[]>> ConsumeBatch(IConsumer<byte[], byte[]> consumer, CancellationToken ct)
    {
        var batch = new List<ConsumeResult<byte[], byte[]>>();
        while (batch.Count < options.InputBatchSize && !ct.IsCancellationRequested)
        {
            var result = consumer.Consume(batch.Count == 0 ? TimeSpan.FromMilliseconds(200) : TimeSpan.Zero);
            if (result is null) break;
            if (!result.IsPartitionEOF) batch.Add(result);
        }
        return batch;
    }

    /// <summary>
    /// Applies a batch exactly once: messages the store already applied (redelivered after a crash or a
    /// failed offset commit) are skipped using the source positions stored with the writes. Messages that
    /// can't be parsed are dead-lettered before the write; writes the store rejects, right after it (if that
    /// is interrupted, the store kept their offsets as rejected, so redelivery evaluates them again).
    /// </summary>
    private async Task ApplyAsync(List<ConsumeResult<byte[], byte[]>> messages, IProducer<byte[], byte[]> deadLetters, CancellationToken ct)
    {
        var next = messages.GroupBy(SourceOf).ToDictionary(g => g.Key, g => g.Max(m => m.Offset.Value) + 1, StringComparer.Ordinal);
        var commands = new List<WriteCommand>(messages.Count);
        var origins = new List<(string Source, long Offset)>(messages.Count);
        var fresh = new List<ConsumeResult<byte[], byte[]>>(messages.Count);
        var unusable = new List<(ConsumeResult<byte[], byte[]> Message, string Reason)>();
        foreach (var message in messages)
        {
            if (store.SourcePositionOf(SourceOf(message))?.Applied(message.Offset.Value) == true) continue;
            var command = InputMessage.ToCommand(message.Message, options.MaxJsonDepth, out var reason);
            if (command is null) { unusable.Add((message, reason!)); continue; }
            commands.Add(command);
            origins.Add((SourceOf(message), message.Offset.Value));
            fresh.Add(message);
        }
        if (commands.Count == 0 && unusable.Count == 0) return;   // all redelivered, all applied before
        if (unusable.Count > 0) await DeadLetterAsync(deadLetters, unusable, ct);

        var outcomes = await store.WriteAsync(commands, atomic: false, ct, new SourceProgress(next, origins));
        var rejected = new List<(ConsumeResult<byte[], byte[]> Message, string Reason)>();
        for (var i = 0; i < outcomes.Count; i++)
            if (outcomes[i].Error is { } error) rejected.Add((fresh[i], $"{error.Kind}: {error.Message}"));
        Interlocked.Add(ref _applied, outcomes.Count(o => o.Succeeded));
        if (rejected.Count > 0) await DeadLetterAsync(deadLetters, rejected, ct);
    }

    private static string SourceOf(ConsumeResult<byte[], byte[]> message) => $"{message.Topic}/{message.Partition.Value}";

    private async Task DeadLetterAsync(IProducer<byte[], byte[]> producer, List<(ConsumeResult<byte[], byte[]> Message, string Reason)> rejected, CancellationToken ct)
    {
        var deliveries = rejected.Select(r =>
        {
            var headers = new Headers();
            foreach (var h in r.Message.Message.Headers ?? []) headers.Add(h.Key, h.GetValueBytes());
            headers.Add(Topics.Headers.DeadLetterReason, Encoding.UTF8.GetBytes(r.Reason));
            headers.Add(Topics.Headers.DeadLetterTopic, Encoding.UTF8.GetBytes(r.Message.Topic));
            headers.Add(Topics.Headers.DeadLetterPartition, Encoding.UTF8.GetBytes(r.Message.Partition.Value.ToString()));
            headers.Add(Topics.Headers.DeadLetterOffset, Encoding.UTF8.GetBytes(r.Message.Offset.Value.ToString()));
            logger.LogWarning("dead-lettered {Topic}[{Partition}]@{Offset}: {Reason}", r.Message.Topic, r.Message.Partition.Value, r.Message.Offset.Value, r.Reason);
            return producer.ProduceAsync(Topics.DocumentsDeadLetter,
                new Message<byte[], byte[]> { Key = r.Message.Message.Key, Value = r.Message.Message.Value, Headers = headers }, ct);
        }).ToList();
        await Task.WhenAll(deliveries);
        Interlocked.Add(ref _deadLettered, rejected.Count);
        IngestMetrics.DeadLetter(rejected.Count);
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
