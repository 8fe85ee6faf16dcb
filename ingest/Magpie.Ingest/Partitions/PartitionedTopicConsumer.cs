using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Ingest.Kafka;
using Magpie.Kafka;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Partitions;

/// <summary>
/// Consumes <c>magpie.documents</c> for a partitioned store, whose membership is this consumer group: the partitions Kafka
/// assigns this process are the store partitions it owns (<see cref="StorePartitions"/> opens each, rebuilding it from
/// <c>magpie.changes</c> when another process wrote it since, before any message of it is read), and a partition taken away is
/// handed on only once Kafka holds every change written to it. A message is applied to its partition's store as the one
/// store's consumer applies it (<see cref="InputBatches"/>); offsets are committed only once the relay has put their changes
/// on <c>magpie.changes</c>, which is what the next owner rebuilds from.
/// </summary>
public sealed class PartitionedTopicConsumer(StorePartitions partitions, InputBatches input, IngestOptions options, ILogger<PartitionedTopicConsumer> logger,
    InputProgress? progress = null) : BackgroundService
{
    /// <summary>Per input partition, the next offset applied and not yet committed.</summary>
    private readonly Dictionary<int, long> _uncommitted = [];
    /// <summary>Partitions lost with the group (Kafka away): still served until the group says who holds them.</summary>
    private readonly HashSet<int> _lost = [];

    protected override Task ExecuteAsync(CancellationToken stoppingToken) => input.RunAsync(Run, stoppingToken);

    private void Run(IProducer<byte[], byte[]> deadLetters, CancellationToken ct)
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
            .SetPartitionsAssignedHandler((_, assigned) => Assigned([.. assigned.Select(p => p.Partition.Value)], ct))
            .SetPartitionsRevokedHandler((_, revoked) => Revoked(current!, [.. revoked.Select(p => p.Partition.Value)]))
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
                var messages = input.ConsumeBatch(consumer, ct);
                if (messages.Count == 0) continue;
                foreach (var part in messages.GroupBy(m => m.Partition.Value))
                {
                    using var lease = partitions.EnterAsync(part.Key, TimeSpan.FromSeconds(30), ct).GetAwaiter().GetResult()
                        ?? throw new InvalidOperationException($"store partition {part.Key} is not open here though its messages were read");
                    var store = lease.Partition.Store;
                    input.ApplyAsync([.. part], store, partitions.PartitionOf, deadLetters, ct).GetAwaiter().GetResult();
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

    private IEnumerable<TopicPartitionOffset> Assigned(List<int> assigned, CancellationToken ct)
    {
        List<int> lost;
        lock (_lost) { lost = [.. _lost]; _lost.Clear(); }
        // Partitions kept through a lost session: the group has decided again. Those it gave back are checked against the
        // topic like any taken over (another process may have written them meanwhile); the others are handed on.
        foreach (var p in lost) partitions.ReleaseAsync(p, TimeSpan.FromSeconds(30)).GetAwaiter().GetResult();
        // Side by side: a takeover's partitions are rebuilt at once, each from its own partition of the topic.
        Task.WhenAll(assigned.Select(p => AcquireAsync(p, ct))).GetAwaiter().GetResult();
        logger.LogInformation("ingest owns store partitions [{Partitions}]", string.Join(", ", partitions.Serving.Select(s => s.Number)));
        return assigned.Select(p => new TopicPartitionOffset(Topics.Documents, p, Offset.Unset));
    }

    /// <summary>Opens an assigned partition, trying again (Kafka unreachable for the rebuild) until it opens or the consumer stops.</summary>
    private async Task AcquireAsync(int partition, CancellationToken ct)
    {
        var backoff = options.Retry.Start();
        while (!ct.IsCancellationRequested)
        {
            try
            {
                await partitions.AcquireAsync(partition, ct);
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

    private void Revoked(IConsumer<byte[], byte[]> consumer, List<int> revoked)
    {
        foreach (var p in revoked)
        {
            partitions.ReleaseAsync(p, TimeSpan.FromSeconds(30)).GetAwaiter().GetResult();
            // Released means Kafka holds its changes: what was applied is committed, so the next owner does not apply it again.
            if (_uncommitted.Remove(p, out var next))
            {
                try { consumer.Commit([new TopicPartitionOffset(Topics.Documents, p, next)]); }
                catch (KafkaException e) { logger.LogWarning("offsets of partition {Partition} not committed on hand-over ({Error})", p, e.Error.Reason); }
            }
        }
    }
}
