using Xunit.Abstractions;

namespace Magpie.Tests.Faults;

/// <summary>
/// The fault suite's bounded form for CI: each fault once, outages of 10 s. Long runs: <c>bench … faults --rounds N
/// --outage-seconds 60 [--kafka]</c>.
/// </summary>
[Collection(Fixtures.KafkaCollection.Name)]
public sealed class FaultSuiteTests(ITestOutputHelper output)
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task No_acknowledged_write_is_lost_and_every_reader_catches_up_after_each_fault(bool kafka)
    {
        var outage = TimeSpan.FromSeconds(10);
        await using var suite = await FaultSuite.StartAsync(output.WriteLine, kafka);
        var results = new List<FaultSuite.Round>();
        var faults = kafka ? FaultSuite.KafkaFaults : FaultSuite.EmbeddedFaults;
        for (var i = 0; i < faults.Length; i++)
            results.Add(await suite.RunRoundAsync(i + 1, faults[i], outage));
        output.WriteLine(FaultSuite.Table(results));
        Assert.All(results, round =>
        {
            Assert.Equal(0, round.Lost);
            Assert.Equal(0, round.IndexMismatches);
            Assert.Equal(0, round.MissingInRabbitMq);
            Assert.Equal(0, round.MissingInSubscription);
            // In Kafka mode this once failed after an indexer's partitions moved (the map side's document → keys record was
            // local to the indexer that had the partition); it is now rebuilt from the mapped topic by the new owner.
            Assert.Equal(0, round.ReduceMismatches);
        });
        Assert.True(results[^1].WritesAcknowledged > 1000, $"only {results[^1].WritesAcknowledged} writes were acknowledged");
        Assert.All(results.Where(r => r.Fault == FaultSuite.Fault.KafkaDown), r => Assert.True(r.WritesDuringOutage > 0, "no write was acknowledged while Kafka was down"));
    }
}
