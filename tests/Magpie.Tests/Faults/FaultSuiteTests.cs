using Xunit.Abstractions;

namespace Magpie.Tests.Faults;

/// <summary>
/// The fault suite's bounded form for CI: two kill -9 rounds and a RabbitMQ outage of 10 s. Long runs:
/// <c>MAGPIE_FAULT_ROUNDS=12 MAGPIE_FAULT_OUTAGE_SECONDS=60 dotnet test --filter FaultSuiteTests</c>.
/// </summary>
public sealed class FaultSuiteTests(ITestOutputHelper output)
{
    [Fact]
    public async Task No_acknowledged_write_is_lost_and_every_reader_catches_up_after_each_fault()
    {
        var rounds = int.TryParse(Environment.GetEnvironmentVariable("MAGPIE_FAULT_ROUNDS"), out var r) ? r : 3;
        var outage = TimeSpan.FromSeconds(int.TryParse(Environment.GetEnvironmentVariable("MAGPIE_FAULT_OUTAGE_SECONDS"), out var s) ? s : 10);
        await using var suite = await FaultSuite.StartAsync(output.WriteLine);
        var results = new List<FaultSuite.Round>();
        for (var i = 1; i <= rounds; i++)
            results.Add(await suite.RunRoundAsync(i, i % 3 == 2 ? FaultSuite.Fault.RabbitMqDown : FaultSuite.Fault.KillAll, outage));
        output.WriteLine(FaultSuite.Table(results));
        Assert.All(results, round =>
        {
            Assert.Equal(0, round.Lost);
            Assert.Equal(0, round.IndexMismatches);
            Assert.Equal(0, round.MissingInRabbitMq);
            Assert.Equal(0, round.MissingInSubscription);
        });
        Assert.True(results[^1].WritesAcknowledged > 1000, $"only {results[^1].WritesAcknowledged} writes were acknowledged");
    }
}
