namespace Magpie.Contracts;

/// <summary>
/// The one way to wait for a condition with a deadline (an etag confirmed, a position reached, a shard started): checked at
/// once, again whenever its <see cref="Signal"/> is raised, and otherwise every <c>poll</c> (for what no signal covers,
/// such as another process's state). Time comes from a <see cref="TimeProvider"/>, so tests drive it with a fake clock.
/// </summary>
public static class Waits
{
    /// <summary>How often a condition without a signal is checked again.</summary>
    public static readonly TimeSpan DefaultPoll = TimeSpan.FromMilliseconds(50);

    /// <summary>True once <paramref name="condition"/> holds; false when <paramref name="timeout"/> passes first (never with <see cref="Timeout.InfiniteTimeSpan"/>).</summary>
    public static Task<bool> UntilAsync(Func<bool> condition, TimeSpan timeout, CancellationToken ct, Signal? signal = null, TimeSpan? poll = null, TimeProvider? time = null) =>
        UntilAsync(_ => ValueTask.FromResult(condition()), timeout, ct, signal, poll, time);

    /// <summary>The same for a condition that has to ask (a request to another process).</summary>
    public static async Task<bool> UntilAsync(Func<CancellationToken, ValueTask<bool>> condition, TimeSpan timeout, CancellationToken ct,
        Signal? signal = null, TimeSpan? poll = null, TimeProvider? time = null)
    {
        time ??= TimeProvider.System;
        var started = time.GetTimestamp();
        while (true)
        {
            // Taken before the check: a raise between the check and the wait still wakes it.
            var raised = signal?.Next;
            if (await condition(ct)) return true;
            var wait = poll ?? (signal is null ? DefaultPoll : TimeSpan.FromSeconds(1));
            if (timeout != Timeout.InfiniteTimeSpan)
            {
                var left = timeout - time.GetElapsedTime(started);
                if (left <= TimeSpan.Zero) return false;
                wait = Min(left, wait);
            }
            if (!await DelayAsync(wait, time, ct, raised)) ct.ThrowIfCancellationRequested();
        }
    }

    /// <summary>Waits <paramref name="delay"/> (nothing when not positive) or until <paramref name="woken"/> completes; false when stopped first.</summary>
    public static async Task<bool> DelayAsync(TimeSpan delay, TimeProvider time, CancellationToken stop, Task? woken = null)
    {
        if (stop.IsCancellationRequested) return false;
        if (delay <= TimeSpan.Zero || woken is { IsCompleted: true }) return true;
        using var sleep = CancellationTokenSource.CreateLinkedTokenSource(stop);
        var sleeping = Task.Delay(delay, time, sleep.Token);
        await (woken is null ? sleeping : Task.WhenAny(sleeping, woken)).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        await sleep.CancelAsync();
        return !stop.IsCancellationRequested;
    }

    /// <summary>The same for a loop on a thread of its own (around a client whose calls block): false when stopped first.</summary>
    public static bool Pause(TimeSpan delay, CancellationToken stop, TimeProvider? time = null) =>
        DelayAsync(delay, time ?? TimeProvider.System, stop).GetAwaiter().GetResult();

    private static TimeSpan Min(TimeSpan a, TimeSpan b) => a < b ? a : b;
}

/// <summary>
/// Something that moved (a confirmed etag, an index's position): <see cref="Raise"/> wakes everyone waiting on
/// <see cref="Next"/>, and the next raise wakes the next ones. Raising costs one allocation and no lock.
/// </summary>
public sealed class Signal
{
    private TaskCompletionSource _next = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes at the next <see cref="Raise"/>.</summary>
    public Task Next => Volatile.Read(ref _next).Task;

    public void Raise() => Interlocked.Exchange(ref _next, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();
}
