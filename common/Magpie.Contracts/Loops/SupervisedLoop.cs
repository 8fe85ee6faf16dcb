namespace Magpie.Contracts;

/// <summary>
/// The one shape of every loop that keeps a reader, a publisher or a connection going (the input consumer, the change relay,
/// an index's worker, an ETL task, a queue sink, the subscription client): an attempt runs until it fails or the loop is
/// stopped; a failure is handed to <c>failed</c> with the delay the back-off gives, and the next attempt starts that long
/// after the failure was reported, waited on the <see cref="TimeProvider"/> (so tests drive it with a fake clock). Work
/// done in <c>failed</c> (closing a client) counts towards the delay, so the next attempt comes when a status said it
/// would. An attempt that got somewhere resets the back-off itself; <c>wake</c>, raised, ends a back-off at once (an
/// operator asked for a retry).
/// </summary>
public static class SupervisedLoop
{
    /// <summary>Runs <paramref name="attempt"/> again and again until <paramref name="stop"/>.</summary>
    public static async Task RunAsync(Func<CancellationToken, Task> attempt, Backoff backoff, Func<Exception, TimeSpan, ValueTask> failed,
        CancellationToken stop, TimeProvider? time = null, Signal? wake = null)
    {
        time ??= TimeProvider.System;
        while (!stop.IsCancellationRequested)
        {
            try
            {
                await attempt(stop);
                continue;
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested) { return; }
            catch (Exception e)
            {
                var delay = backoff.Next();
                var reported = time.GetTimestamp();
                var woken = wake?.Next;
                await failed(e, delay);
                if (!await Waits.DelayAsync(delay - time.GetElapsedTime(reported), time, stop, woken)) return;
            }
        }
    }

    /// <summary>The same for a loop on a thread of its own, around a client whose calls block (Kafka's consumer).</summary>
    public static void Run(Action<CancellationToken> attempt, Backoff backoff, Action<Exception, TimeSpan> failed, CancellationToken stop, TimeProvider? time = null) =>
        RunAsync(ct => { attempt(ct); return Task.CompletedTask; }, backoff, (e, delay) => { failed(e, delay); return ValueTask.CompletedTask; }, stop, time)
            .GetAwaiter().GetResult();

    /// <summary>
    /// Calls <paramref name="call"/> until it succeeds: a failure <paramref name="transient"/> accepts is reported to
    /// <paramref name="retrying"/> and tried again after the back-off; any other failure is the caller's.
    /// </summary>
    public static async Task<T> CallAsync<T>(Func<CancellationToken, Task<T>> call, Backoff backoff, Func<Exception, bool> transient,
        Action<Exception>? retrying, CancellationToken ct, TimeProvider? time = null)
    {
        time ??= TimeProvider.System;
        while (true)
        {
            try { return await call(ct); }
            catch (Exception e) when (transient(e))
            {
                ct.ThrowIfCancellationRequested();
                retrying?.Invoke(e);
                await Task.Delay(backoff.Next(), time, ct);
            }
        }
    }
}
