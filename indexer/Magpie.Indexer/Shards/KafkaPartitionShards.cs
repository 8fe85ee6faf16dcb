using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Changes;
using Magpie.Kafka;
using Magpie.Kafka.Changes;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Shards;

/// <summary>
/// Kafka mode: the partitions of <c>magpie.changes</c> this process owns, decided by Kafka's consumer-group
/// protocol (no home-made membership). This consumer only holds the membership: it joins the indexer group
/// with the cooperative-sticky assignor (a rebalance moves only the partitions that must move), starts
/// each assigned partition at its end and pauses it, so it fetches next to nothing. The shards themselves
/// read their partition with their own <see cref="KafkaChangeFeed"/> from the offset in their Lucene commit.
/// The client id is this process's advertised HTTP address: the query target finds shard owners by
/// describing the group (<c>IndexOwners</c>). The address is also the static group instance id (KIP-345): an
/// indexer restarted after a crash takes its partitions back at once instead of waiting for a rebalance
/// around its dead predecessor. The cost: a stopped indexer's partitions move only when its session times
/// out (10 s), since static members do not leave the group on close.
/// </summary>
public sealed class KafkaPartitionShards(string bootstrapServers, string group, string advertisedUrl, int partitions, short replicationFactor, ILogger log)
    : IIndexShards
{
    private readonly CancellationTokenSource _stop = new();
    private readonly Lock _lock = new();
    private HashSet<int> _owned = [];
    private Thread? _member;

    public IReadOnlyCollection<int> Owned { get { lock (_lock) return [.. _owned]; } }

    public event Action? Changed;

    public IReadOnlyCollection<int> Every { get; } = [.. Enumerable.Range(0, partitions)];

    public async Task<IReadOnlyDictionary<string, long>?> EndAsync(CancellationToken ct) =>
        (await new KafkaChangeFeed(bootstrapServers, Topics.Changes).EndAsync(ct))?.After.Next;

    public MapReduce.MappedTopics Mapped { get; } = new(bootstrapServers, group, partitions, replicationFactor, log);

    public IChangeFeed FeedOf(int shard) => new KafkaChangeFeed(bootstrapServers, Topics.Changes, shard);

    public IChangeFeed FeedFollowingLoadsOf(int shard) => new Maps.LoadFollowingFeed(FeedOf(shard), new KafkaChangeFeed(bootstrapServers, Topics.Changes));

    public async Task StartAsync(CancellationToken ct)
    {
        await TopicAdmin.EnsureAsync(bootstrapServers, TopicAdmin.DefaultTopics(partitions, replicationFactor), ct);
        _member = new Thread(Member) { IsBackground = true, Name = "magpie-indexer-membership" };
        _member.Start();
    }

    private void Member()
    {
        var config = KafkaClients.Consumer(bootstrapServers, group);
        config.ClientId = advertisedUrl;
        config.GroupInstanceId = advertisedUrl;
        config.PartitionAssignmentStrategy = PartitionAssignmentStrategy.CooperativeSticky;
        config.EnableAutoCommit = false;
        config.SessionTimeoutMs = 10_000;   // a crashed indexer's partitions move within ~10 s
        using var consumer = KafkaClients.BuildConsumer<Ignore, Ignore>(config, log, b => b
            .SetPartitionsAssignedHandler((_, assigned) =>
            {
                Update(assigned.Select(p => p.Partition.Value), gained: true);
                return assigned.Select(p => new TopicPartitionOffset(p, Offset.End));
            })
            .SetPartitionsRevokedHandler((_, revoked) => Update(revoked.Select(p => p.Partition.Value), gained: false))
            .SetPartitionsLostHandler((_, lost) => Update(lost.Select(p => p.Partition.Value), gained: false)));
        consumer.Subscribe(Topics.Changes);
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                consumer.Consume(TimeSpan.FromMilliseconds(500));
                if (consumer.Assignment.Count > 0) consumer.Pause(consumer.Assignment);
            }
            catch (KafkaException e) when (e.Error.Code == ErrorCode.FencedInstanceId)
            {
                // Another live indexer advertises the same URL: the group can hold only one of them.
                log.LogError("indexer group membership: another indexer joined with this advertised URL ({Url}); each indexer needs its own (Magpie:AdvertisedUrl, MAGPIE__ADVERTISEDURL)", advertisedUrl);
                Waits.Pause(TimeSpan.FromSeconds(5), _stop.Token);
            }
            catch (KafkaException e)
            {
                log.LogWarning("indexer group membership: {Error}", e.Error.Reason);
                Waits.Pause(TimeSpan.FromSeconds(1), _stop.Token);
            }
        }
        try { consumer.Close(); } catch (KafkaException) { }
    }

    private void Update(IEnumerable<int> partitionsChanged, bool gained)
    {
        lock (_lock)
        {
            var next = new HashSet<int>(_owned);
            foreach (var p in partitionsChanged) if (gained) next.Add(p); else next.Remove(p);
            _owned = next;
        }
        log.LogInformation("indexer owns partitions [{Partitions}] of {Topic}", string.Join(", ", Owned.Order()), Topics.Changes);
        Changed?.Invoke();
    }

    public ValueTask DisposeAsync()
    {
        _stop.Cancel();
        _member?.Join(TimeSpan.FromSeconds(15));
        Mapped.Dispose();
        return ValueTask.CompletedTask;
    }
}
