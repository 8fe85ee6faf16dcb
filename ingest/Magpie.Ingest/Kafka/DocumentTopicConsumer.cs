using System.Text;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Documents;
using Magpie.Ingest.Documents;
using Magpie.Ingest.Partitions;
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
/// With a partitioned store the consumer group is also the store's membership: the partitions Kafka assigns this process
/// are the store partitions it owns (<see cref="StorePartitions"/> opens each, rebuilding it from <c>magpie.changes</c> when
/// another process wrote it since, before any message of it is read), and a partition taken away is handed on only once Kafka
/// holds every change written to it. Offsets are then committed only once the relay has put their changes on
/// <c>magpie.changes</c>, which is what the next owner rebuilds from.
/// </summary>
public sealed class DocumentTopicConsumer(IngestOptions options, ILogger<DocumentTopicConsumer> logger, DocumentStore? store = null,
    StorePartitions? partitions = null, InputProgress? progress = null) : BackgroundService
{
    private long _applied, _deadLettered;
    /// <summary>Partitioned: per input partition, the next offset applied and not yet committed.</summary>
    private readonly Dictionary<int, long> _uncommitted = [];
    /// <summary>Partitioned: partitions lost with the group (Kafka away): still served until the group says who holds them.</summary>
    private readonly HashSet<int> _lost = [];

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
        using var deadLetters = KafkaClients.BuildProducer<byte[], byte[]>(KafkaClients.Producer(servers, "magpie-ingest-dlq"), logger);
        if (partitions is not null)
        {
            RunPartitioned(partitions, deadLetters, ct);
            return;
        }
        using var consumer = KafkaClients.BuildConsumer<byte[], byte[]>(KafkaClients.Consumer(servers, options.ConsumerGroup), logger);
        consumer.Subscribe(Topics.Documents);
        logger.LogInformation("consuming {Topic} as group {Group}", Topics.Documents, options.ConsumerGroup);
        try
        {
            while (!ct.IsCancellationRequested)
            {
                var messages = ConsumeBatch(consumer, ct);
                if (messages.Count == 0) continue;
                ApplyAsync(messages, store!, null, deadLetters, ct).GetAwaiter().GetResult();
                var applied = messages.GroupBy(m => m.TopicPartition).Select(g => new TopicPartitionOffset(g.Key, g.Max(m => m.Offset.Value) + 1)).ToList();
                consumer.Commit(applied);
                // Read your writes through Kafka: everything before these offsets is in the store, the newest at the store's last etag.
                var etag = store!.LastEtag;
                foreach (var a in applied) progress?.Applied(a.Partition.Value, a.Offset.Value, etag);
            }
        }
        finally
        {
            consumer.Close();
        }
    }

    private void RunPartitioned(StorePartitions held, IProducer<byte[], byte[]> deadLetters, CancellationToken ct)
    {
        var config = KafkaClients.Consumer(options.KafkaBootstrapServers!, options.ConsumerGroup);
        // The client id is the advertised URL: how the other members find a partition's owner (PartitionRouter).
        config.ClientId = options.AdvertisedUrl;
        config.PartitionAssignmentStrategy = PartitionAssignmentStrategy.CooperativeSticky;
        config.SessionTimeoutMs = 6_000;   // a killed member's partitions move after 6 s (the broker's smallest session by default)
        config.HeartbeatIntervalMs = 500;  // the survivors hear of the rebalance at their next heartbeat
        // A takeover rebuilds partitions inside the assignment callback, before any of their messages is read.
        config.MaxPollIntervalMs = 600_000;
        IConsumer<byte[], byte[]>? current = null;
        using var consumer = KafkaClients.BuildConsumer<byte[], byte[]>(config, logger, b => b
            .SetPartitionsAssignedHandler((_, assigned) => Assigned(held, [.. assigned.Select(p => p.Partition.Value)], ct))
            .SetPartitionsRevokedHandler((_, revoked) => Revoked(current!, held, [.. revoked.Select(p => p.Partition.Value)]))
            .SetPartitionsLostHandler((_, lost) =>
            {
                // Kafka is away (the session ran out): the owner goes on taking writes, acknowledged as held by its log only.
                logger.LogWarning("ingest group session lost; partitions [{Partitions}] stay served until the group answers again", string.Join(", ", lost.Select(p => p.Partition.Value)));
                lock (_lost) foreach (var p in lost) _lost.Add(p.Partition.Value);
            }));
        current = consumer;
        consumer.Subscribe(Topics.Documents);
        logger.LogInformation("consuming {Topic} as group {Group}, owning the store partitions it is assigned", Topics.Documents, options.ConsumerGroup);
        try
        {
            while (!ct.IsCancellationRequested)
            {
                var messages = ConsumeBatch(consumer, ct);
                if (messages.Count == 0) continue;
                foreach (var part in messages.GroupBy(m => m.Partition.Value))
                {
                    using var lease = held.EnterAsync(part.Key, TimeSpan.FromSeconds(30), ct).GetAwaiter().GetResult()
                        ?? throw new InvalidOperationException($"store partition {part.Key} is not open here though its messages were read");
                    var store = lease.Partition.Store;
                    ApplyAsync([.. part], store, held, deadLetters, ct).GetAwaiter().GetResult();
                    var next = part.Max(m => m.Offset.Value) + 1;
                    _uncommitted[part.Key] = next;
                    // The offset is committed once the changes are on magpie.changes: the next owner rebuilds from there.
                    var etag = store.LastEtag;
                    if (lease.Partition.Relay.PublishedAsync(etag, TimeSpan.FromSeconds(30), ct).GetAwaiter().GetResult() is null) continue;
                    consumer.Commit([new TopicPartitionOffset(Topics.Documents, part.Key, next)]);
                    _uncommitted.Remove(part.Key);
                    progress?.Applied(part.Key, next, etag, lease.Partition.Relay);
                }
            }
        }
        finally
        {
            consumer.Close();
        }
    }

    private IEnumerable<TopicPartitionOffset> Assigned(StorePartitions held, List<int> assigned, CancellationToken ct)
    {
        List<int> lost;
        lock (_lost) { lost = [.. _lost]; _lost.Clear(); }
        // Partitions kept through a lost session: the group has decided again. Those it gave back are checked against the
        // topic like any taken over (another process may have written them meanwhile); the others are handed on.
        foreach (var p in lost) held.ReleaseAsync(p, TimeSpan.FromSeconds(30)).GetAwaiter().GetResult();
        // Side by side: a takeover's partitions are rebuilt at once, each from its own partition of the topic.
        Task.WhenAll(assigned.Select(p => AcquireAsync(held, p, ct))).GetAwaiter().GetResult();
        logger.LogInformation("ingest owns store partitions [{Partitions}]", string.Join(", ", held.Serving.Select(s => s.Number)));
        return assigned.Select(p => new TopicPartitionOffset(Topics.Documents, p, Offset.Unset));
    }

    /// <summary>Opens an assigned partition, trying again (Kafka unreachable for the rebuild) until it opens or the consumer stops.</summary>
    private async Task AcquireAsync(StorePartitions held, int partition, CancellationToken ct)
    {
        var backoff = options.Retry.Start();
        while (!ct.IsCancellationRequested)
        {
            try
            {
                await held.AcquireAsync(partition, ct);
                return;
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                var delay = backoff.Next();
                logger.LogWarning("store partition {Partition} not opened ({Error}); trying again in {Delay}", partition, e.Message, delay);
                await Task.Delay(delay, ct);
            }
        }
    }

    private void Revoked(IConsumer<byte[], byte[]> consumer, StorePartitions held, List<int> revoked)
    {
        foreach (var p in revoked)
        {
            held.ReleaseAsync(p, TimeSpan.FromSeconds(30)).GetAwaiter().GetResult();
            // Released means Kafka holds its changes: what was applied is committed, so the next owner does not apply it again.
            if (_uncommitted.Remove(p, out var next))
            {
                try { consumer.Commit([new TopicPartitionOffset(Topics.Documents, p, next)]); }
                catch (KafkaException e) { logger.LogWarning("offsets of partition {Partition} not committed on hand-over ({Error})", p, e.Error.Reason); }
            }
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
    private async Task ApplyAsync(List<ConsumeResult<byte[], byte[]>> messages, DocumentStore store, StorePartitions? partitioned,
        IProducer<byte[], byte[]> deadLetters, CancellationToken ct)
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
            if (partitioned?.PartitionOf(command.Id) is { } owner && owner != message.Partition.Value)
            {
                // Placed by another partitioner (or keyed in another case): its document belongs to another owner's store.
                unusable.Add((message, $"the message is on partition {message.Partition.Value} but document '{command.Id}' belongs to partition {owner} " +
                    "(a partitioned store places a document by murmur2 of its id in lower case, Kafka's default key placement: key messages by the id in lower case)"));
                continue;
            }
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
