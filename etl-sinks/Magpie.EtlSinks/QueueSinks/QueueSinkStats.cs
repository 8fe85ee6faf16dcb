using Magpie.EtlSinks.Tasks;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>Where a sink's time went, in total: waiting for messages, running the script, writing to the store, dead-lettering, acknowledging.</summary>
public sealed record SinkTimeSpent(double ReceiveMs, double ScriptMs, double WriteMs, double DeadLetterMs, double AcknowledgeMs);

public sealed record SinkError(DateTimeOffset At, string Message, string? MessageId);

/// <summary>What <c>GET /sinks/{name}/stats</c> shows.</summary>
public sealed record QueueSinkStatsSnapshot(
    string Name, string State, IReadOnlyList<string> Sources, long? Lag, long MessagesReceived, long MessagesApplied, long Writes,
    long Redeliveries, long Skipped, long DeadLettered, long Reconnects, string? LastError, DateTimeOffset? LastBatchAt,
    DateTimeOffset? NextAttemptAt, SinkTimeSpent TimeSpent, IReadOnlyList<SinkError> RecentErrors);

/// <summary>Live counters of one sink, written by its runner and read by HTTP requests and the metrics.</summary>
public sealed class QueueSinkStats(string name, IReadOnlyList<string> sources)
{
    private const int KeptErrors = 20;
    private readonly Lock _lock = new();
    private readonly Queue<SinkError> _errors = new();
    private string _state = RunnerState.Starting;
    private string? _lastError;
    private long? _lag;
    private long _received, _applied, _writes, _redeliveries, _skipped, _deadLettered, _reconnects;
    private DateTimeOffset? _lastBatchAt, _nextAttemptAt;
    private TimeSpan _receive, _script, _write, _deadLetter, _acknowledge;

    public void Disabled() { lock (_lock) _state = RunnerState.Disabled; }

    public void Running() { lock (_lock) { _state = RunnerState.Running; _nextAttemptAt = null; } }

    public void Lag(long? lag) { lock (_lock) _lag = lag; }

    /// <param name="applied">messages whose writes are now in the store</param>
    /// <param name="redeliveries">messages the store had applied before (a redelivery), acknowledged without writing again</param>
    /// <param name="skipped">messages whose script wrote nothing</param>
    public void Batch(int received, int applied, int writes, int redeliveries, int skipped, IReadOnlyList<(string MessageId, string Reason)> deadLettered)
    {
        lock (_lock)
        {
            _received += received; _applied += applied; _writes += writes; _redeliveries += redeliveries; _skipped += skipped;
            _deadLettered += deadLettered.Count;
            _lastBatchAt = DateTimeOffset.UtcNow;
            foreach (var (id, reason) in deadLettered.TakeLast(KeptErrors)) Remember(new SinkError(DateTimeOffset.UtcNow, reason, id));
        }
        QueueSinkMetrics.Batch(name, applied, redeliveries, skipped, deadLettered.Count, writes);
    }

    public void Spent(TimeSpan receive = default, TimeSpan script = default, TimeSpan write = default, TimeSpan deadLetter = default, TimeSpan acknowledge = default)
    {
        lock (_lock) { _receive += receive; _script += script; _write += write; _deadLetter += deadLetter; _acknowledge += acknowledge; }
    }

    /// <summary>The sink stopped: <paramref name="state"/> says whether it waits for a broker (or the store) or for a person; it retries at <paramref name="retryAt"/>.</summary>
    public void Interrupted(string state, string message, DateTimeOffset retryAt)
    {
        lock (_lock)
        {
            if (state == RunnerState.Reconnecting) _reconnects++;
            _state = state;
            _lastError = message;
            _nextAttemptAt = retryAt;
            Remember(new SinkError(DateTimeOffset.UtcNow, message, null));
        }
        QueueSinkMetrics.Interrupted(name);
    }

    public void Failed(string message) { lock (_lock) { _state = RunnerState.Failed; _lastError = message; Remember(new SinkError(DateTimeOffset.UtcNow, message, null)); } }

    public QueueSinkStatsSnapshot Snapshot()
    {
        lock (_lock)
            return new(name, _state, sources, _lag, _received, _applied, _writes, _redeliveries, _skipped, _deadLettered, _reconnects, _lastError,
                _lastBatchAt, _nextAttemptAt,
                new SinkTimeSpent(Math.Round(_receive.TotalMilliseconds), Math.Round(_script.TotalMilliseconds), Math.Round(_write.TotalMilliseconds),
                    Math.Round(_deadLetter.TotalMilliseconds), Math.Round(_acknowledge.TotalMilliseconds)),
                [.. _errors]);
    }

    private void Remember(SinkError e)
    {
        _errors.Enqueue(e);
        while (_errors.Count > KeptErrors) _errors.Dequeue();
    }
}
