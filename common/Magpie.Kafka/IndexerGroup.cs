using Confluent.Kafka;
using Magpie.Contracts;

namespace Magpie.Kafka;

/// <summary>An indexer process as Kafka sees it: its advertised HTTP address (its client id) and the magpie.changes partitions it holds.</summary>
public sealed record IndexerMember(string Url, IReadOnlyList<int> Partitions);

/// <summary>Who holds which partitions of magpie.changes right now, and the partitions there are (each the moment it is asked).</summary>
public sealed record IndexerLayout(IReadOnlyList<IndexerMember> Members, IReadOnlyList<int> Partitions)
{
    /// <summary>Every partition has an owner.</summary>
    public bool Complete => Partitions.All(p => Members.Any(m => m.Partitions.Contains(p)));
}

/// <summary>
/// The indexer consumer group, described through Kafka's admin API: membership and ownership come from the
/// consumer-group protocol, not from a protocol of ours. Used by the query target (to fan queries out) and by
/// ingest (to wait for indexes after a write). Throws <see cref="KafkaException"/> when Kafka can't tell. The ingest processes of a
/// partitioned store form a group of the same kind on <c>magpie.documents</c> (<paramref name="topic"/>): who owns which documents.
/// </summary>
public sealed class IndexerGroup(string bootstrapServers, string group, string topic = Topics.Changes) : IDisposable
{
    private readonly Lock _lock = new();
    private IAdminClient? _admin;

    public string Name => group;

    public async Task<IndexerLayout> DescribeAsync()
    {
        var admin = Admin();
        var described = await admin.DescribeConsumerGroupsAsync([group], new() { RequestTimeout = TimeSpan.FromSeconds(5) });
        var members = described.ConsumerGroupDescriptions.SelectMany(g => g.Members)
            .Select(m => new IndexerMember(m.ClientId,
                m.Assignment.TopicPartitions.Where(tp => tp.Topic == topic).Select(tp => tp.Partition.Value).Order().ToList()))
            .Where(m => m.Partitions.Count > 0).ToList();
        var partitions = await Task.Run(() => admin.GetMetadata(topic, TimeSpan.FromSeconds(5)).Topics
            .SelectMany(t => t.Partitions).Select(p => p.PartitionId).Order().ToList());
        return new IndexerLayout(members, partitions);
    }

    private IAdminClient Admin()
    {
        lock (_lock)
        {
            if (_admin is not null) return _admin;
            KafkaNative.EnsureLoaded();
            return _admin = new AdminClientBuilder(KafkaClients.Admin(bootstrapServers)).Build();
        }
    }

    public void Dispose() => _admin?.Dispose();
}
