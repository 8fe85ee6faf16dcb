using System.Runtime.CompilerServices;
using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.EtlSinks;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Delivery;
using Magpie.EtlSinks.Messages;
using Magpie.EtlSinks.Tasks;
using Microsoft.Extensions.Logging.Abstractions;
using Magpie.EtlSinks.Brokers;
using Magpie.EtlSinks.Runners;

namespace Magpie.Tests.Etl;

/// <summary>The runner's own reactions to a broker client, with a client that misbehaves on cue.</summary>
[Trait("Category", "Fast")]
public sealed class EtlTaskRunnerTests : IDisposable
{
    private readonly string _dir = Directory.CreateTempSubdirectory("magpie-etl-runner-").FullName;

    [Fact]
    public async Task A_failed_publish_shows_as_reconnecting_at_once_and_a_close_that_hangs_does_not_hold_the_task()
    {
        var opened = 0;
        await using var runner = Start(reconnectMs: 100, () => { Interlocked.Increment(ref opened); return new BrokerGoneTarget(); });

        // The publish fails and the client's close never returns (a broker gone mid-handshake): the state says so anyway.
        var reconnecting = await WaitAsync(() => runner.Snapshot().State == RunnerState.Reconnecting, TimeSpan.FromSeconds(5));
        Assert.True(reconnecting, $"state {runner.Snapshot().State}");
        Assert.Contains("connection lost", runner.Snapshot().LastError);
        Assert.Equal(1, Volatile.Read(ref opened));
        // After the close timeout the task goes on with a new client rather than waiting on the old one for good.
        var retried = await WaitAsync(() => Volatile.Read(ref opened) >= 2, EtlTaskRunner.ClientCloseTimeout + TimeSpan.FromSeconds(10));
        Assert.True(retried, $"opened {opened} clients");
    }

    [Fact]
    public async Task The_next_attempt_comes_when_the_status_says_even_when_the_close_takes_a_while()
    {
        var opens = new List<DateTimeOffset>();
        await using var runner = Start(reconnectMs: 3_000, () => { lock (opens) opens.Add(DateTimeOffset.UtcNow); return new BrokerGoneTarget(TimeSpan.FromSeconds(2)); });

        Assert.True(await WaitAsync(() => runner.Snapshot().State == RunnerState.Reconnecting, TimeSpan.FromSeconds(5)));
        var said = runner.Snapshot().NextAttemptAt ?? throw new Xunit.Sdk.XunitException("no next attempt in the status");
        Assert.True(await WaitAsync(() => { lock (opens) return opens.Count >= 2; }, TimeSpan.FromSeconds(15)), "no second attempt");
        DateTimeOffset second;
        lock (opens) second = opens[1];
        // The 2 s close is part of the 3 s delay, not added to it (that would open the new client 2 s after the time given).
        Assert.InRange(second, said - TimeSpan.FromMilliseconds(100), said + TimeSpan.FromSeconds(1));
    }

    /// <summary>A started task of one transform over the feed's single order, reconnecting after a fixed delay, with its clients from <paramref name="targets"/>.</summary>
    private EtlTaskRunner Start(int reconnectMs, Func<IMessageTarget> targets)
    {
        var task = new EtlTaskDefinition
        {
            Connection = "rabbit",
            Reconnect = new EtlReconnect { InitialDelayMs = reconnectMs, MaxDelayMs = reconnectMs },
            Transforms = [new EtlTransform { Collections = JsonDocument.Parse("""["Orders"]""").RootElement, Script = "loadToOrders({ Total: this.Total });" }],
        };
        var runner = new EtlTaskRunner("orders", task, new EtlConnection { Type = "rabbitmq", Url = "amqp://localhost" }, new OneChangeFeed(),
            new EtlOptions { DataDir = _dir }, NullLogger.Instance) { Targets = targets };
        runner.Start();
        return runner;
    }

    private static async Task<bool> WaitAsync(Func<bool> done, TimeSpan timeout)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (!done())
        {
            if (DateTime.UtcNow > deadline) return false;
            await Task.Delay(20);
        }
        return true;
    }

    /// <summary>Opens, then loses the broker on the first publish; its close takes <paramref name="close"/> (by default, for ever).</summary>
    private sealed class BrokerGoneTarget(TimeSpan? close = null) : IMessageTarget
    {
        public Task OpenAsync(IReadOnlyCollection<string> destinations, CancellationToken ct) => Task.CompletedTask;

        public Task PublishAsync(IReadOnlyList<OutgoingMessage> messages, CancellationToken ct) =>
            Task.FromException(new BrokerException("RabbitMQ connection lost: reset by peer", needsUser: false));

        public ValueTask DisposeAsync() => new(Task.Delay(close ?? Timeout.InfiniteTimeSpan));
    }

    /// <summary>One order, then nothing more until cancelled.</summary>
    private sealed class OneChangeFeed : IChangeFeed
    {
        public async IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize, [EnumeratorCancellation] CancellationToken cancellationToken)
        {
            var order = JsonDocument.Parse("""{"Total": 12}""").RootElement;
            yield return new ChangeBatch([new ChangeEvent("orders/1", "Orders", 1, ChangeOp.Put, DateTimeOffset.UtcNow, order)],
                new ChangeFeedPosition(new Dictionary<string, long> { ["log"] = 1 }));
            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
    }

    public void Dispose()
    {
        try { Directory.Delete(_dir, recursive: true); } catch (IOException) { }
    }
}
