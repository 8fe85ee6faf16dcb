using System.Text;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Documents;
using Magpie.Ingest.Documents;
using Magpie.Kafka;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// What every consumer of <c>magpie.documents</c> does with a batch, whichever store it feeds (the one store, or a partition of
/// a partitioned store): consume it, apply it exactly once (the store's source positions skip what it applied before), and
/// dead-letter what can't be applied, with the reason. Also the loop they run on: its own thread, restarted after a failure.
/// </summary>
public sealed class InputBatches(IngestOptions options, ILogger<InputBatches> logger)
{
    private long _applied, _deadLettered;

    /// <summary>What the consumer has done, for <c>GET /stats/pipeline</c>.</summary>
    public object Status() => new { applied = Interlocked.Read(ref _applied), deadLettered = Interlocked.Read(ref _deadLettered) };

    /// <summary>
    /// Runs <paramref name="consume"/> on its own thread (Confluent's consumer API blocks, and blocking thread-pool threads starves
    /// the HTTP API exactly when Kafka is unreachable), with the topics made and a dead-letter producer, again after each failure.
    /// </summary>
    public Task RunAsync(Action<IProducer<byte[], byte[]>, CancellationToken> consume, CancellationToken stoppingToken) =>
        Task.Factory.StartNew(() => SupervisedLoop.Run(ct =>
        {
            var servers = options.KafkaBootstrapServers!;
            TopicAdmin.EnsureAsync(servers, TopicAdmin.DefaultTopics(options.KafkaPartitions, options.KafkaReplicationFactor), ct).GetAwaiter().GetResult();
            using var deadLetters = KafkaClients.BuildProducer<byte[], byte[]>(KafkaClients.Producer(servers, "magpie-ingest-dlq"), logger);
            consume(deadLetters, ct);
        }, options.Retry.Start(), (e, delay) =>
            logger.LogWarning("input topic consumer stopped ({Error}); uncommitted messages will be re-read, restarting in {Delay}", e.Message, delay), stoppingToken),
            stoppingToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);

    public List<ConsumeResult<byte[], byte[]>> ConsumeBatch(IConsumer<byte[], byte[]> consumer, CancellationToken ct)
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
    /// <param name="partitionOf">A partitioned store: the partition each document belongs to (a message on another is dead-lettered).</param>
    public async Task ApplyAsync(List<ConsumeResult<byte[], byte[]>> messages, DocumentStore store, Func<string, int>? partitionOf,
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
            if (partitionOf?.Invoke(command.Id) is { } owner && owner != message.Partition.Value)
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
