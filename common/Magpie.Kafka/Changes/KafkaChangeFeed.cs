using System.Runtime.CompilerServices;
using System.Threading.Channels;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Changes;

namespace Magpie.Kafka.Changes;

/// <summary>
/// The change feed read from <c>magpie.changes</c>. Partitions are assigned explicitly (not through a
/// consumer group) because the reader owns its position: it persists <see cref="ChangeBatch.After"/>
/// beside what it built and passes it back in. Confluent's consumer blocks, so it runs on its own thread
/// and hands batches over through a bounded channel (a slow reader slows the consumer, nothing piles up).
/// With <paramref name="partition"/> it reads that one partition (an indexer's shard), else all of them.
/// </summary>
public sealed class KafkaChangeFeed(string bootstrapServers, string topic = Topics.Changes, int? partition = null) : IChangeFeed
{
    /// <summary>High watermarks as last seen by any reader (librdkafka caches them from fetch responses).</summary>
    private readonly System.Collections.Concurrent.ConcurrentDictionary<int, long> _highWatermarks = new();

    public long? Backlog(ChangeFeedPosition position, long lastEtag)
    {
        if (_highWatermarks.IsEmpty) return null;
        long backlog = 0;
        foreach (var (partition, high) in _highWatermarks)
            backlog += Math.Max(0, high - (position.Next.TryGetValue(partition.ToString(), out var next) ? next : 0));
        return backlog;
    }

    /// <summary>
    /// The end offset of every partition (of the one partition, for a shard's feed), asked of the broker. A topic that does not
    /// exist yet holds no change: its end is the beginning, and partitions it gets later are read from their start.
    /// </summary>
    public Task<ChangeBatch?> EndAsync(CancellationToken cancellationToken) => Task.Run(() =>
    {
        using var consumer = KafkaClients.BuildConsumer<string, byte[]>(KafkaClients.Consumer(bootstrapServers, $"magpie-changefeed-{Guid.NewGuid():N}"));
        var partitions = partition is { } only ? [new Partition(only)] : PartitionsOf(consumer, topic, cancellationToken, wait: TimeSpan.Zero);
        if (partitions is null) return new ChangeBatch([], ChangeFeedPosition.Beginning);
        return (ChangeBatch?)new ChangeBatch([], new ChangeFeedPosition(partitions.ToDictionary(p => p.Value.ToString(),
            p => consumer.QueryWatermarkOffsets(new TopicPartition(topic, p), TimeSpan.FromSeconds(10)).High.Value)));
    }, cancellationToken);

    public async IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize,
        [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        // One parsed batch ahead: librdkafka already buffers what it fetched (natively, outside the GC heap). Parsed batches
        // queued deeper waited seconds behind a busy index, six shards' worth, and were all promoted to gen 2 before use.
        var batches = Channel.CreateBounded<ChangeBatch>(new BoundedChannelOptions(1) { SingleReader = true, SingleWriter = true });
        var consuming = Task.Factory.StartNew(() => Consume(from, maxBatchSize, batches.Writer, stop.Token),
            stop.Token, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        try
        {
            await foreach (var batch in batches.Reader.ReadAllAsync(cancellationToken))
                yield return batch;
            await consuming;   // surfaces the consumer's failure, if that is what ended the channel
        }
        finally
        {
            stop.Cancel();
            await consuming.ContinueWith(_ => { }, TaskScheduler.Default);
        }
    }

    private void Consume(ChangeFeedPosition from, int maxBatchSize, ChannelWriter<ChangeBatch> output, CancellationToken ct)
    {
        Exception? failure = null;
        try
        {
            var config = KafkaClients.Consumer(bootstrapServers, $"magpie-changefeed-{Guid.NewGuid():N}");
            config.ConsumeResultFields = "none";   // value, partition and offset are all it reads: no headers, timestamp or topic per message
            using var consumer = KafkaClients.BuildConsumer<string, byte[]>(config);
            var partitions = partition is { } only ? [new Partition(only)] : PartitionsOf(consumer, topic, ct);
            consumer.Assign(partitions.Select(p => new TopicPartitionOffset(topic, p,
                from.Next.TryGetValue(p.Value.ToString(), out var next) ? new Offset(next) : Offset.Beginning)));
            var assigned = partitions.Select(p => new TopicPartition(topic, p)).ToList();   // fixed: asking the client each batch cost a native list
            var position = new Dictionary<string, long>(from.Next);
            while (!ct.IsCancellationRequested)
            {
                var changes = new List<ChangeEvent>();
                while (changes.Count < maxBatchSize && !ct.IsCancellationRequested)
                {
                    var result = consumer.Consume(changes.Count == 0 ? TimeSpan.FromMilliseconds(200) : TimeSpan.Zero);
                    if (result is null || result.IsPartitionEOF) break;
                    changes.Add(ChangeEventJson.Parse(result.Message.Value));
                    position[result.Partition.Value.ToString()] = result.Offset.Value + 1;
                }
                var advanced = false;
                foreach (var tp in assigned)
                {
                    if (consumer.GetWatermarkOffsets(tp) is { High.Value: >= 0 } w) _highWatermarks[tp.Partition.Value] = w.High.Value;
                    // A transactional topic (the mapped topics) ends each transaction with a marker that is never delivered: the
                    // consumer's position steps over it, the last message's offset does not. Without this the reader would stay
                    // one offset short of the end for good, and its index would say it is behind.
                    var key = tp.Partition.Value.ToString();
                    if (consumer.Position(tp).Value is var at && at >= 0 && at > position.GetValueOrDefault(key))
                        (position[key], advanced) = (at, true);
                }
                if (changes.Count > 0 || advanced)
                {
                    var handed = output.WriteAsync(new ChangeBatch(changes, new ChangeFeedPosition(new Dictionary<string, long>(position))), ct).AsTask();
                    // Behind a busy index the channel is full at every batch: wait on a kernel event, since Task.Wait spins first
                    // (a shard's consumer thread per partition, spinning on two cores, showed as 10 % of the indexer's managed samples).
                    if (!handed.IsCompleted) ((IAsyncResult)handed).AsyncWaitHandle.WaitOne();
                    handed.GetAwaiter().GetResult();
                }
            }
            consumer.Close();
        }
        catch (OperationCanceledException) when (ct.IsCancellationRequested) { }
        catch (Exception e) { failure = e; }
        finally { output.TryComplete(failure); }
    }

    private static List<Partition> PartitionsOf(IConsumer<string, byte[]> consumer, string topic, CancellationToken ct) =>
        PartitionsOf(consumer, topic, ct, wait: TimeSpan.FromSeconds(30)) ?? throw new InvalidOperationException($"topic {topic} does not exist");

    /// <summary>
    /// The topic's partitions, waited for up to <paramref name="wait"/> (the ingest target creates the topic, and may start
    /// later): null if the broker still does not know the topic then; a <see cref="KafkaException"/> for any other error.
    /// </summary>
    private static List<Partition>? PartitionsOf(IConsumer<string, byte[]> consumer, string topic, CancellationToken ct, TimeSpan wait)
    {
        using var admin = new DependentAdminClientBuilder(consumer.Handle).Build();
        var deadline = DateTime.UtcNow + wait;
        while (true)
        {
            var meta = admin.GetMetadata(topic, TimeSpan.FromSeconds(5));
            var t = meta.Topics.FirstOrDefault(x => x.Topic == topic);
            if (t is { Error.Code: ErrorCode.NoError, Partitions.Count: > 0 })
                return t.Partitions.Select(p => new Partition(p.PartitionId)).ToList();
            if (DateTime.UtcNow >= deadline)
                return t is null || t.Error.Code is ErrorCode.UnknownTopicOrPart or ErrorCode.NoError ? null : throw new KafkaException(t.Error);
            Waits.Pause(TimeSpan.FromMilliseconds(250), ct);
            ct.ThrowIfCancellationRequested();
        }
    }
}
