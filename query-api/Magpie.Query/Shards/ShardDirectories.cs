using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Kafka;

namespace Magpie.Query.Shards;

/// <summary>Embedded: the indexer in this process holds the only shard.</summary>
public sealed class LocalShardDirectory(LocalShardOwner local) : IShardDirectory
{
    public Task<ShardLayout> LayoutAsync(CancellationToken ct) => Task.FromResult(new ShardLayout([(local, null)], true, null));
}

/// <summary>
/// Kafka mode: the owners are the members of the indexer consumer group, found by describing the group
/// (each member's client id is its advertised HTTP address, its assignment the partitions it holds) —
/// membership comes from Kafka, not from a protocol of ours. The layout is cached for a second; the end
/// offsets of magpie.changes are read for every query, so staleness is judged against the moment it ran.
/// </summary>
public sealed class KafkaShardDirectory(string bootstrapServers, string indexerGroup, HttpClient http) : IShardDirectory, IDisposable
{
    private readonly SemaphoreSlim _refresh = new(1, 1);
    private readonly IndexerGroup _group = new(bootstrapServers, indexerGroup);
    private readonly Lazy<IConsumer<byte[], byte[]>> _offsets =
        new(() => KafkaClients.BuildConsumer<byte[], byte[]>(KafkaClients.Consumer(bootstrapServers, $"magpie-query-{Guid.NewGuid():N}")));
    private (DateTime At, IndexerLayout Layout)? _cached;

    public async Task<ShardLayout> LayoutAsync(CancellationToken ct)
    {
        var layout = await DescribeAsync(ct);
        var owners = layout.Members.Select(m => ((IShardOwner)new RemoteShardOwner(http, m.Url), (IReadOnlyList<int>?)m.Partitions)).ToList();
        var target = await Task.Run(() => layout.Partitions.ToDictionary(p => p.ToString(),
            p => _offsets.Value.QueryWatermarkOffsets(new TopicPartition(Topics.Changes, p), TimeSpan.FromSeconds(5)).High.Value), ct);
        return new ShardLayout(owners, layout.Complete, target);
    }

    private async Task<IndexerLayout> DescribeAsync(CancellationToken ct)
    {
        if (_cached is { } c && DateTime.UtcNow - c.At < TimeSpan.FromSeconds(1)) return c.Layout;
        await _refresh.WaitAsync(ct);
        try
        {
            if (_cached is { } again && DateTime.UtcNow - again.At < TimeSpan.FromSeconds(1)) return again.Layout;
            IndexerLayout layout;
            try { layout = await _group.DescribeAsync(); }
            catch (KafkaException e) { throw new QueryProblem(ErrorKind.Unavailable, $"can't find the indexers (consumer group {indexerGroup}): {e.Error.Reason}"); }
            _cached = (DateTime.UtcNow, layout);
            return layout;
        }
        finally { _refresh.Release(); }
    }

    public void Dispose()
    {
        _group.Dispose();
        if (_offsets.IsValueCreated) _offsets.Value.Dispose();
    }
}
