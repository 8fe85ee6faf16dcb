using Magpie.Contracts;
using Microsoft.Extensions.Time.Testing;

namespace Magpie.Tests.Contracts;

/// <summary>The one supervised loop and the one wait every long-running loop uses, driven by a fake clock.</summary>
[Trait("Category", "Fast")]
public sealed class SupervisedLoopTests
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(10);

    /// <summary>Lets the loop's continuations run (they resume on the thread pool), then checks.</summary>
    private static async Task EventuallyAsync(Func<bool> condition)
    {
        var deadline = DateTime.UtcNow + Patience;
        while (!condition()) { Assert.True(DateTime.UtcNow < deadline, "the loop did not get there"); await Task.Delay(5); }
    }

    /// <summary>The loop starts its back-off timer right after reporting the failure: give it that moment before moving the clock.</summary>
    private static async Task TimerSetAsync(Func<bool> reported)
    {
        await EventuallyAsync(reported);
        await Task.Delay(50);
    }

    [Fact]
    public async Task A_failed_attempt_is_retried_after_the_backoff_on_the_clock_and_the_delays_double_to_their_cap()
    {
        var clock = new FakeTimeProvider();
        var attempts = 0;
        var delays = new List<TimeSpan>();
        using var stop = new CancellationTokenSource();
        var loop = SupervisedLoop.RunAsync(_ => { Interlocked.Increment(ref attempts); throw new IOException("broker away"); },
            new Backoff(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(4)),
            (e, delay) => { Assert.Equal("broker away", e.Message); lock (delays) delays.Add(delay); return ValueTask.CompletedTask; }, stop.Token, clock);

        await EventuallyAsync(() => attempts == 1);
        await TimerSetAsync(() => delays.Count == 1);
        clock.Advance(TimeSpan.FromMilliseconds(999));
        await Task.Delay(50);
        Assert.Equal(1, attempts);   // not a moment early
        clock.Advance(TimeSpan.FromMilliseconds(1));
        await EventuallyAsync(() => attempts == 2);
        await TimerSetAsync(() => delays.Count == 2);
        clock.Advance(TimeSpan.FromSeconds(2));
        await EventuallyAsync(() => attempts == 3);
        await TimerSetAsync(() => delays.Count == 3);
        clock.Advance(TimeSpan.FromSeconds(4));
        await EventuallyAsync(() => attempts == 4);
        await TimerSetAsync(() => delays.Count == 4);
        clock.Advance(TimeSpan.FromSeconds(4));
        await EventuallyAsync(() => attempts == 5);
        await EventuallyAsync(() => { lock (delays) return delays.Count == 5; });
        lock (delays) Assert.Equal([1, 2, 4, 4, 4], delays.Take(5).Select(d => d.TotalSeconds).ToList());

        stop.Cancel();
        await loop.WaitAsync(Patience);   // stopping ends a back-off at once
    }

    [Fact]
    public async Task Time_spent_reporting_a_failure_counts_towards_the_delay_and_a_wake_ends_the_wait()
    {
        var clock = new FakeTimeProvider();
        var attempts = 0;
        var wake = new Signal();
        using var stop = new CancellationTokenSource();
        var loop = SupervisedLoop.RunAsync(_ => { Interlocked.Increment(ref attempts); throw new IOException("closed"); },
            new Backoff(TimeSpan.FromSeconds(10), TimeSpan.FromSeconds(10)),
            (_, _) => { clock.Advance(TimeSpan.FromSeconds(7)); return ValueTask.CompletedTask; },   // closing the client took 7 s
            stop.Token, clock, wake);

        await EventuallyAsync(() => attempts == 1);
        await Task.Delay(50);                     // the back-off's timer starts once the report returned
        clock.Advance(TimeSpan.FromSeconds(3));   // 7 + 3: the delay the status announced
        await EventuallyAsync(() => attempts == 2);
        await Task.Delay(50);
        wake.Raise();                             // an operator's retry: no waiting out the rest
        await EventuallyAsync(() => attempts == 3);
        stop.Cancel();
        await loop.WaitAsync(Patience);
    }

    [Fact]
    public async Task An_attempt_that_got_somewhere_resets_the_backoff_and_a_blocking_loop_runs_the_same_way()
    {
        var clock = new FakeTimeProvider();
        var backoff = new Backoff(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(30));
        backoff.Next(); backoff.Next();   // two failures behind it: the next delay would be 4 s
        var attempts = 0;
        var delays = new List<TimeSpan>();
        using var stop = new CancellationTokenSource();
        var thread = Task.Factory.StartNew(() => SupervisedLoop.Run(_ =>
        {
            Interlocked.Increment(ref attempts);
            backoff.Reset();   // connected, read something
            throw new IOException("lost again");
        }, backoff, (_, delay) => { lock (delays) delays.Add(delay); }, stop.Token, clock), TaskCreationOptions.LongRunning);

        await EventuallyAsync(() => attempts == 1);
        // The loop's thread starts its timer after the failure is reported: advance until the next attempt comes.
        while (Volatile.Read(ref attempts) < 2) { clock.Advance(TimeSpan.FromSeconds(1)); await Task.Delay(5); }
        lock (delays) Assert.Equal(TimeSpan.FromSeconds(1), delays[0]);
        stop.Cancel();
        await thread.WaitAsync(Patience);
    }

    [Fact]
    public async Task A_call_is_retried_while_its_failure_is_transient_and_any_other_failure_is_the_callers()
    {
        var clock = new FakeTimeProvider();
        var calls = 0;
        var call = SupervisedLoop.CallAsync(_ => ++calls < 3 ? throw new HttpRequestException("503") : Task.FromResult("answer"),
            new Backoff(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(8)), e => e is HttpRequestException, null, CancellationToken.None, clock);
        await EventuallyAsync(() => calls == 1);
        clock.Advance(TimeSpan.FromSeconds(1));
        await EventuallyAsync(() => calls == 2);
        clock.Advance(TimeSpan.FromSeconds(2));
        Assert.Equal("answer", await call.WaitAsync(Patience));

        await Assert.ThrowsAsync<InvalidOperationException>(() => SupervisedLoop.CallAsync<string>(_ => throw new InvalidOperationException("400"),
            new Backoff(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(8)), e => e is HttpRequestException, null, CancellationToken.None, clock));
    }

    [Fact]
    public async Task A_wait_wakes_on_its_signal_without_the_clock_and_gives_up_at_its_timeout()
    {
        var clock = new FakeTimeProvider();
        var level = 0;
        var raised = new Signal();
        var waiting = Waits.UntilAsync(() => Volatile.Read(ref level) >= 3, TimeSpan.FromSeconds(30), CancellationToken.None, raised, time: clock);
        await Task.Delay(50);
        Assert.False(waiting.IsCompleted);
        Volatile.Write(ref level, 3);
        raised.Raise();   // no clock movement: the signal alone wakes it
        Assert.True(await waiting.WaitAsync(Patience));

        // Without a deadline it waits as long as it takes (an infinite timeout is not "already over").
        var ready = false;
        var unbounded = Waits.UntilAsync(() => Volatile.Read(ref ready), Timeout.InfiniteTimeSpan, CancellationToken.None, poll: TimeSpan.FromSeconds(1), time: clock);
        for (var i = 0; i < 5; i++) { clock.Advance(TimeSpan.FromHours(1)); await Task.Delay(5); }
        Assert.False(unbounded.IsCompleted);
        Volatile.Write(ref ready, true);
        while (!unbounded.IsCompleted) { clock.Advance(TimeSpan.FromSeconds(1)); await Task.Delay(5); }
        Assert.True(await unbounded);

        var never = Waits.UntilAsync(() => false, TimeSpan.FromSeconds(30), CancellationToken.None, poll: TimeSpan.FromSeconds(1), time: clock);
        for (var i = 0; i < 29 && !never.IsCompleted; i++) { clock.Advance(TimeSpan.FromSeconds(1)); await Task.Delay(5); }
        Assert.False(never.IsCompleted);
        while (!never.IsCompleted) { clock.Advance(TimeSpan.FromSeconds(1)); await Task.Delay(5); }
        Assert.False(await never);
    }
}
