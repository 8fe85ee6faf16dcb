using Magpie.Contracts.Changes;
using Magpie.Kafka.Changes;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Kafka;

/// <summary>Where the Kafka change feed ends, as a "now" subscription asks it, against a real broker.</summary>
[Collection(KafkaCollection.Name)]
public sealed class ChangeFeedEndTests(KafkaFixture kafka)
{
    [Fact]
    public async Task A_topic_that_does_not_exist_yet_ends_at_the_beginning_without_waiting_for_it()
    {
        // A query target started before the ingest target created the topic: nothing was written, so "now" is the beginning.
        // The old lookup waited 30 s for partitions and then failed (a 500 to the client); 15 s is the limit here.
        using var limit = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        var feed = new KafkaChangeFeed(kafka.Broker.BootstrapServers, topic: $"magpie.changes.absent{Guid.NewGuid():N}");

        var end = await feed.EndAsync(limit.Token);

        Assert.NotNull(end);
        Assert.Empty(end.Changes);
        Assert.Empty(end.After.Next);
    }
}
