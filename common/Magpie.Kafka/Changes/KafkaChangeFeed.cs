using System.Runtime.CompilerServices;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Changes;

namespace Magpie.Kafka.Changes;

/// <summary>
/// The change feed read from <c>magpie.changes</c>. Partitions are assigned explicitly (not through a
/// consumer group) because the reader owns its position: it persists <see cref="ChangeBatch.After"/>
/// beside what it built and passes it back in.
/// </summary>
public sealed class KafkaChangeFeed(string bootstrapServers, string topic = Topics.Changes) : IChangeFeed
{
    public async IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize,
        [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        var config = KafkaClients.Consumer(bootstrapServers, $"magpie-changefeed-{Guid.NewGuid():N}");
        using var consumer = KafkaClients.BuildConsumer<string, byte[]>(config);
        var partitions = await Task.Run(() => PartitionsOf(consumer, topic), cancellationToken);
        consumer.Assign(partitions.Select(p => new TopicPartitionOffset(topic, p,
            from.Next.TryGetValue(p.Value.ToString(), out var next) ? new Offset(next) : Offset.Beginning)));
        var position = new Dictionary<string, long>(from.Next);
        try
        {
            while (!cancellationToken.IsCancellationRequested)
            {
                var batch = await Task.Run(() => ConsumeBatch(consumer, position, maxBatchSize, cancellationToken), cancellationToken);
                if (batch.Count > 0) yield return new ChangeBatch(batch, new ChangeFeedPosition(new Dictionary<string, long>(position)));
            }
        }
        finally
        {
            consumer.Close();
        }
    }

    private static List<ChangeEvent> ConsumeBatch(IConsumer<string, byte[]> consumer, Dictionary<string, long> position, int max, CancellationToken ct)
    {
        var batch = new List<ChangeEvent>();
        var wait = TimeSpan.FromMilliseconds(200);
        while (batch.Count < max && !ct.IsCancellationRequested)
        {
            var result = consumer.Consume(batch.Count == 0 ? wait : TimeSpan.Zero);
            if (result is null || result.IsPartitionEOF) break;
            batch.Add(ChangeEventJson.Parse(result.Message.Value));
            position[result.Partition.Value.ToString()] = result.Offset.Value + 1;
        }
        return batch;
    }

    private static List<Partition> PartitionsOf(IConsumer<string, byte[]> consumer, string topic)
    {
        using var admin = new DependentAdminClientBuilder(consumer.Handle).Build();
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (true)
        {
            var meta = admin.GetMetadata(topic, TimeSpan.FromSeconds(5));
            var t = meta.Topics.FirstOrDefault(x => x.Topic == topic);
            if (t is { Error.Code: ErrorCode.NoError, Partitions.Count: > 0 })
                return t.Partitions.Select(p => new Partition(p.PartitionId)).ToList();
            if (DateTime.UtcNow > deadline) throw new InvalidOperationException($"topic {topic} has no partitions: {t?.Error}");
            Thread.Sleep(250);
        }
    }
}
