using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace Magpie.Security;

/// <summary>
/// Slows down guessing, per client address, on HTTP and PostgreSQL alike. A failed login is answered late: 0.25 s, doubling
/// with each failure from that address, up to 5 s; and an address may have at most <see cref="MaxPendingPerSource"/> failed
/// answers waiting at once, so sending guesses in parallel does not get round the delay (beyond it: refused at once, 429).
/// Correct keys are never delayed, so clients sharing an address (a proxy) with a misconfigured one are not held up.
/// Every failure is logged with the address and what was tried (a key's name, never a secret). An address is forgotten
/// 15 minutes after its last failure.
/// </summary>
public sealed class FailedLogins(ILogger<FailedLogins> log)
{
    public const int MaxPendingPerSource = 8;
    private const int MaxTracked = 10_000;
    private static readonly TimeSpan Forget = TimeSpan.FromMinutes(15);
    private static readonly TimeSpan MaxDelay = TimeSpan.FromSeconds(5);
    private readonly ConcurrentDictionary<string, Source> _sources = new();

    /// <summary>Records a failure and waits out its delay; false when the address already has too many failures waiting (refuse now).</summary>
    public async Task<bool> FailedAsync(string address, string endpoint, string what, CancellationToken ct)
    {
        if (_sources.Count >= MaxTracked) Prune();
        var source = _sources.GetOrAdd(address, _ => new Source());
        int failures, pending;
        lock (source)
        {
            if (DateTime.UtcNow - source.LastFailure > Forget) source.Failures = 0;
            failures = ++source.Failures;
            source.LastFailure = DateTime.UtcNow;
            pending = source.Pending < MaxPendingPerSource ? ++source.Pending : -1;
        }
        var delay = Delay(failures);
        log.LogWarning("failed login on {Endpoint} from {Source}: {What} ({Failures} failures; answered in {Delay:0.##} s{Refused})",
            endpoint, address, what, failures, pending < 0 ? 0 : delay.TotalSeconds, pending < 0 ? ", refused: too many waiting" : "");
        if (pending < 0) return false;
        try { await Task.Delay(delay, ct); }
        finally { lock (source) source.Pending--; }
        return true;
    }

    public static TimeSpan Delay(int failures) =>
        TimeSpan.FromMilliseconds(Math.Min(MaxDelay.TotalMilliseconds, 250 * Math.Pow(2, Math.Min(failures - 1, 20))));

    private void Prune()
    {
        var cutoff = DateTime.UtcNow - Forget;
        foreach (var (address, s) in _sources)
            if (s.LastFailure < cutoff && s.Pending == 0) _sources.TryRemove(address, out _);
    }

    private sealed class Source
    {
        public int Failures;
        public int Pending;
        public DateTime LastFailure;
    }
}
