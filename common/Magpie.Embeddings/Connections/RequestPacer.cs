using System.Diagnostics;

namespace Magpie.Embeddings.Connections;

/// <summary>
/// A per-minute budget spread evenly: each request waits until a minute ÷ budget after the one before it, so no two go out closer
/// than that and no minute holds more than the budget. (A token bucket refills on its own timer, not from the last request: two
/// requests could leave milliseconds apart, one at the end of a period and one at the start of the next.)
/// </summary>
internal sealed class RequestPacer(int perMinute)
{
    private readonly long _interval = (long)(Stopwatch.Frequency * 60.0 / perMinute);
    private readonly Lock _lock = new();
    private long _next;

    /// <summary>Completes at this request's turn (a cancelled wait still spends its turn: the budget errs on the side of fewer).</summary>
    public Task WaitTurnAsync(CancellationToken ct)
    {
        long now, at;
        lock (_lock)
        {
            now = Stopwatch.GetTimestamp();
            at = Math.Max(now, _next);
            _next = at + _interval;
        }
        return at > now ? Task.Delay(Stopwatch.GetElapsedTime(now, at), ct) : Task.CompletedTask;
    }
}
