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
    private IAdminClient? _admin;
    private IConsumer<byte[], byte[]>? _offsets;
    private (DateTime At, List<(IShardOwner, IReadOnlyList<int>?)> Owners, List<int> Partitions)? _cached;

    public async Task<ShardLayout> LayoutAsync(CancellationToken ct)
    {
        var (owners, partitions) = await OwnersAsync(ct);
        var held = owners.SelectMany(o => o.Item2 ?? []).ToHashSet();
        var target = await Task.Run(() => partitions.ToDictionary(p => p.ToString(),
            p => _offsets!.QueryWatermarkOffsets(new TopicPartition(Topics.Changes, p), TimeSpan.FromSeconds(5)).High.Value), ct);
        return new ShardLayout(owners, partitions.All(held.Contains), target);
    }

    private async Task<(List<(IShardOwner, IReadOnlyList<int>?)>, List<int>)> OwnersAsync(CancellationToken ct)
    {
        if (_cached is { } c && DateTime.UtcNow - c.At < TimeSpan.FromSeconds(1)) return (c.Owners, c.Partitions);
        await _refresh.WaitAsync(ct);
        try
        {
            if (_cached is { } again && DateTime.UtcNow - again.At < TimeSpan.FromSeconds(1)) return (again.Owners, again.Partitions);
            KafkaNative.EnsureLoaded();
            _admin ??= new AdminClientBuilder(new AdminClientConfig { BootstrapServers = bootstrapServers }).Build();
            _offsets ??= KafkaClients.BuildConsumer<byte[], byte[]>(KafkaClients.Consumer(bootstrapServers, $"magpie-query-{Guid.NewGuid():N}"));
            List<(IShardOwner, IReadOnlyList<int>?)> owners;
            try
            {
                var described = await _admin.DescribeConsumerGroupsAsync([indexerGroup], new() { RequestTimeout = TimeSpan.FromSeconds(5) });
                owners = described.ConsumerGroupDescriptions.SelectMany(g => g.Members)
                    .Select(m => ((IShardOwner)new RemoteShardOwner(http, m.ClientId),
                        (IReadOnlyList<int>?)m.Assignment.TopicPartitions.Where(tp => tp.Topic == Topics.Changes).Select(tp => tp.Partition.Value).Order().ToList()))
                    .Where(o => o.Item2!.Count > 0).ToList();
            }
            catch (KafkaException e) { throw new QueryProblem(503, $"can't find the indexers (consumer group {indexerGroup}): {e.Error.Reason}"); }
            var partitions = _admin.GetMetadata(Topics.Changes, TimeSpan.FromSeconds(5)).Topics
                .SelectMany(t => t.Partitions).Select(p => p.PartitionId).Order().ToList();
            _cached = (DateTime.UtcNow, owners, partitions);
            return (owners, partitions);
        }
        finally { _refresh.Release(); }
    }

    public void Dispose()
    {
        _admin?.Dispose();
        _offsets?.Dispose();
    }
}
