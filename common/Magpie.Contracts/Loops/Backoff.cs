namespace Magpie.Contracts;

/// <summary>
/// The one retry delay of every loop that retries (the input consumer, the change relay, an index's worker, an ETL task, the
/// subscription client): it starts at <c>initial</c>, doubles after each failure up to <c>max</c>, and starts again once the
/// loop got somewhere (<see cref="Reset"/>). Not thread-safe: one loop owns one.
/// </summary>
public sealed class Backoff(TimeSpan initial, TimeSpan max)
{
    /// <summary>The delay to wait now.</summary>
    public TimeSpan Current { get; private set; } = initial <= max ? initial : max;

    /// <summary>The delay to wait now; the next one is twice as long, up to the maximum.</summary>
    public TimeSpan Next()
    {
        var now = Current;
        Current = TimeSpan.FromTicks(Math.Min(Current.Ticks * 2, max.Ticks));
        return now;
    }

    /// <summary>The loop got somewhere: the next failure waits the initial delay again.</summary>
    public void Reset() => Current = initial <= max ? initial : max;
}

/// <summary>
/// The retry delays of the server's own loops (the input consumer, the change relay, an index's worker): settings
/// <c>RetryDelayMilliseconds</c> and <c>MaxRetryDelaySeconds</c>, 1 s doubling to 30 s unless set.
/// </summary>
public sealed record RetryDelays(TimeSpan Initial, TimeSpan Max)
{
    public static RetryDelays Default { get; } = new(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(30));

    /// <summary>A back-off for one loop.</summary>
    public Backoff Start() => new(Initial, Max);
}
