using Confluent.Kafka;
using Confluent.Kafka.Admin;
using Magpie.Contracts;

namespace Magpie.Kafka;

/// <summary>Creates Magpie's topics when they are missing (an existing topic is left as it is).</summary>
public static class TopicAdmin
{
    public static IReadOnlyList<TopicSpecification> DefaultTopics(int partitions, short replicationFactor) =>
    [
        new() { Name = Topics.Documents, NumPartitions = partitions, ReplicationFactor = replicationFactor },
        new() { Name = Topics.DocumentsDeadLetter, NumPartitions = 1, ReplicationFactor = replicationFactor },
        // Compacted: the latest change per document id is enough to rebuild an index shard (ARCHITECTURE.md, Scale-out).
        new()
        {
            Name = Topics.Changes, NumPartitions = partitions, ReplicationFactor = replicationFactor,
            Configs = new() { ["cleanup.policy"] = "compact" },
        },
        new()
        {
            Name = Topics.Indexes, NumPartitions = 1, ReplicationFactor = replicationFactor,
            Configs = new() { ["cleanup.policy"] = "compact" },
        },
        new()
        {
            Name = Topics.InputProgress, NumPartitions = 1, ReplicationFactor = replicationFactor,
            Configs = new() { ["cleanup.policy"] = "compact" },
        },
        new()
        {
            Name = Topics.Subscriptions, NumPartitions = 1, ReplicationFactor = replicationFactor,
            Configs = new() { ["cleanup.policy"] = "compact" },
        },
        new()
        {
            Name = Topics.Embeddings, NumPartitions = partitions, ReplicationFactor = replicationFactor,
            Configs = new() { ["cleanup.policy"] = "compact" },
        },
    ];

    /// <summary>
    /// Whether the cluster answers for <paramref name="topic"/> within <paramref name="timeout"/>: its metadata comes back with
    /// a leader for every partition. Tells "Kafka is away" (wait) from "Kafka is there and a client still gets nowhere".
    /// </summary>
    public static async Task<bool> AnswersForAsync(string bootstrapServers, string topic, TimeSpan timeout)
    {
        KafkaNative.EnsureLoaded();
        return await Task.Run(() =>
        {
            using var admin = new AdminClientBuilder(KafkaClients.Admin(bootstrapServers)).Build();
            try
            {
                var meta = admin.GetMetadata(topic, timeout).Topics.SingleOrDefault(t => t.Topic == topic);
                return meta is { Error.IsError: false, Partitions.Count: > 0 } && meta.Partitions.All(p => p.Leader >= 0 && !p.Error.IsError);
            }
            catch (KafkaException) { return false; }
        });
    }

    public static async Task EnsureAsync(string bootstrapServers, IEnumerable<TopicSpecification> topics, CancellationToken ct = default)
    {
        KafkaNative.EnsureLoaded();
        using var admin = new AdminClientBuilder(KafkaClients.Admin(bootstrapServers)).Build();
        var existing = admin.GetMetadata(TimeSpan.FromSeconds(10)).Topics
            .Where(t => t.Error.Code == ErrorCode.NoError).Select(t => t.Topic).ToHashSet();
        var missing = topics.Where(t => !existing.Contains(t.Name)).ToList();
        if (missing.Count == 0) return;
        try
        {
            await admin.CreateTopicsAsync(missing, new CreateTopicsOptions { RequestTimeout = TimeSpan.FromSeconds(15) });
        }
        catch (CreateTopicsException e) when (e.Results.All(r => r.Error.Code is ErrorCode.NoError or ErrorCode.TopicAlreadyExists))
        {
            // Another process created them first: fine.
        }
    }
}
