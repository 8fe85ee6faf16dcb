using System.Text.Json;
using Confluent.Kafka;
using Magpie.Kafka;
using Microsoft.Extensions.Logging.Abstractions;

namespace Magpie.Tests.Faults;

/// <summary>
/// When the live map/reduce index of the fault suite disagrees with the store (Kafka mode), says which side is wrong: reads
/// the index's mapped topic from the start and, per document, the keys its latest message per (key, document) still holds.
/// A document held under a key other than its stored group means the map side published it so (or the messages landed out
/// of order); a topic that agrees with the store means the reduce side misapplied it.
/// </summary>
internal static class MappedTopicDiagnosis
{
    private sealed record Message(int Partition, long Offset, DateTime At, string Key, int Values, int SourcePartition);

    public static IEnumerable<string> Explain(string bootstrapServers, string indexTopicPart, IReadOnlyDictionary<string, string> groupOf, int show = 4)
    {
        using var admin = new AdminClientBuilder(KafkaClients.Admin(bootstrapServers)).Build();
        var topic = admin.GetMetadata(TimeSpan.FromSeconds(10)).Topics.Select(t => t.Topic)
            .FirstOrDefault(t => t.StartsWith("magpie.mapped.", StringComparison.Ordinal) && t.Contains(indexTopicPart, StringComparison.Ordinal));
        if (topic is null) { yield return $"  no mapped topic for {indexTopicPart}"; yield break; }
        var history = new Dictionary<string, List<Message>>();
        using (var consumer = KafkaClients.BuildConsumer<string, byte[]>(KafkaClients.Consumer(bootstrapServers, $"diagnosis-{Guid.NewGuid():N}"), NullLogger.Instance))
        {
            var partitions = admin.GetMetadata(topic, TimeSpan.FromSeconds(10)).Topics[0].Partitions.Select(p => p.PartitionId).ToList();
            var ends = partitions.ToDictionary(p => p, p => consumer.QueryWatermarkOffsets(new TopicPartition(topic, p), TimeSpan.FromSeconds(10)).High.Value);
            consumer.Assign(partitions.Select(p => new TopicPartitionOffset(topic, p, Offset.Beginning)));
            var deadline = DateTime.UtcNow.AddMinutes(1);
            while (ends.Any(e => consumer.Position(new TopicPartition(topic, e.Key)).Value < e.Value && e.Value > 0) && DateTime.UtcNow < deadline)
            {
                if (consumer.Consume(TimeSpan.FromMilliseconds(200)) is not { } m) continue;
                using var e = JsonDocument.Parse(m.Message.Value);
                if (e.RootElement.GetProperty("collection").GetString() != "@mapped") continue;
                var id = e.RootElement.GetProperty("id").GetString()!;
                var d = e.RootElement.GetProperty("document");
                if (!history.TryGetValue(id, out var list)) history[id] = list = [];
                list.Add(new Message(m.Partition.Value, m.Offset.Value, m.Message.Timestamp.UtcDateTime, JsonSerializer.Deserialize<string>(d.GetProperty("key").GetString()!)!,
                    d.GetProperty("values").GetArrayLength(), d.GetProperty("partition").GetInt32()));
            }
        }
        var wrong = 0;
        foreach (var (id, messages) in history)
        {
            var held = messages.GroupBy(m => m.Key).Select(g => g.Last()).Where(m => m.Values > 0).Select(m => m.Key).Order().ToList();
            var stored = groupOf.GetValueOrDefault(id);
            if (held.Count == (stored is null ? 0 : 1) && (stored is null || held[0] == stored)) continue;
            if (wrong++ >= show) continue;
            yield return $"  topic holds {id} under [{string.Join(", ", held)}], store: {stored ?? "(none)"}; its last messages:";
            foreach (var m in messages.TakeLast(8))
                yield return $"    p{m.Partition}@{m.Offset} {m.At:HH:mm:ss.fff} key {m.Key} values {m.Values} from source partition {m.SourcePartition}";
        }
        yield return $"  mapped topic {topic}: {history.Count} documents, {wrong} held under keys other than their stored group";
    }
}
