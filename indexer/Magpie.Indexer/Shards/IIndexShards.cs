using Magpie.Contracts.Changes;

namespace Magpie.Indexer.Shards;

/// <summary>
/// Which parts of the change feed this process indexes. Embedded: one shard, the whole feed
/// (<see cref="WholeFeed"/>). Kafka mode: one shard per <c>magpie.changes</c> partition this process
/// owns in the indexer consumer group (<see cref="KafkaPartitionShards"/>); every index keeps one Lucene
/// index per owned shard on local disk.
/// </summary>
public interface IIndexShards : IAsyncDisposable
{
    /// <summary>The shard number of the whole feed (embedded).</summary>
    public const int All = -1;

    IReadOnlyCollection<int> Owned { get; }

    /// <summary>Every shard of the feed, owned here or not: a replacement index is promoted once each of them has caught up.</summary>
    IReadOnlyCollection<int> Every { get; }

    /// <summary>Kafka mode: the end offset of every partition of the feed, asked of the broker; null embedded (a shard's backlog says it).</summary>
    Task<IReadOnlyDictionary<string, long>?> EndAsync(CancellationToken ct) => Task.FromResult<IReadOnlyDictionary<string, long>?>(null);

    /// <summary>Raised when shards are gained or lost (a consumer-group rebalance).</summary>
    event Action? Changed;

    /// <summary>The changes of one shard.</summary>
    IChangeFeed FeedOf(int shard);

    /// <summary>
    /// The changes of one shard for an index whose maps <c>load()</c>: with the ids changed on every other shard beside them
    /// (<see cref="Maps.LoadFollowingFeed"/>). Embedded, the one shard is the whole feed already.
    /// </summary>
    IChangeFeed FeedFollowingLoadsOf(int shard) => FeedOf(shard);

    Task StartAsync(CancellationToken ct);

    /// <summary>Kafka mode: the topics that carry map output to the reduce keys' owners; null when embedded (map and reduce share a worker).</summary>
    MapReduce.MappedTopics? Mapped => null;
}

/// <summary>Embedded mode: the whole change feed is one shard.</summary>
public sealed class WholeFeed(IChangeFeed feed) : IIndexShards
{
    public IReadOnlyCollection<int> Owned { get; } = [IIndexShards.All];

    public IReadOnlyCollection<int> Every => Owned;

    public event Action? Changed { add { } remove { } }

    public IChangeFeed FeedOf(int shard) => feed;

    public Task StartAsync(CancellationToken ct) => Task.CompletedTask;

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;
}
