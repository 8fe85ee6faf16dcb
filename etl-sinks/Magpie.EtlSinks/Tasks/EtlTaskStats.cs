using Magpie.EtlSinks.Brokers;
namespace Magpie.EtlSinks.Tasks;

public sealed record EtlError(DateTimeOffset At, string Message, string? DocumentId);

/// <summary>Where a task's time went, in total: waiting for changes, running scripts, waiting for broker confirms, persisting its position.</summary>
public sealed record EtlTimeSpent(double ReadMs, double TransformMs, double PublishMs, double PersistMs);

/// <summary>What GET /etl/tasks/{name}/stats shows.</summary>
public sealed record EtlTaskStatsSnapshot(
    string Name, string State, long LastProcessedEtag, long? Lag, long MessagesSent, long DocumentsProcessed,
    long DocumentsFiltered, long ScriptErrors, long Reconnects, string? LastError, DateTimeOffset? LastBatchAt,
    DateTimeOffset? NextAttemptAt, EtlTimeSpent TimeSpent, IReadOnlyList<EtlError> RecentErrors);

/// <summary>Live counters of one task, written by its runner and read by HTTP requests.</summary>
public sealed class EtlTaskStats(string name)
{
    private const int KeptErrors = 20;
    private readonly Lock _lock = new();
    private readonly Queue<EtlError> _errors = new();
    private string _state = RunnerState.Starting;
    private string? _lastError;
    private long _lastEtag, _sent, _processed, _filtered, _scriptErrors, _reconnects;
    private DateTimeOffset? _lastBatchAt, _nextAttemptAt;
    private TimeSpan _read, _transform, _publish, _persist;

    public void Resumed(EtlTaskPosition p) { lock (_lock) { _lastEtag = p.LastEtag; _sent = p.MessagesSent; _processed = p.DocumentsProcessed; } }

    public void Running() { lock (_lock) { _state = RunnerState.Running; _nextAttemptAt = null; } }

    public void Batch(long lastEtag, int documents, int filtered, int messages)
    {
        lock (_lock) { _lastEtag = lastEtag; _processed += documents; _filtered += filtered; _sent += messages; _lastBatchAt = DateTimeOffset.UtcNow; }
        EtlMetrics.Batch(name, documents, messages);
    }

    public void Spent(TimeSpan read = default, TimeSpan transform = default, TimeSpan publish = default, TimeSpan persist = default)
    {
        lock (_lock) { _read += read; _transform += transform; _publish += publish; _persist += persist; }
    }

    public void ScriptError(string documentId, string message)
    {
        lock (_lock) { _scriptErrors++; Remember(new EtlError(DateTimeOffset.UtcNow, message, documentId)); }
        EtlMetrics.Error(name, "script");
    }

    /// <summary>The task stopped publishing: <paramref name="state"/> says whether it waits for the broker or for a person; it retries at <paramref name="retryAt"/>.</summary>
    public void Interrupted(string state, string message, DateTimeOffset retryAt)
    {
        lock (_lock)
        {
            if (state == RunnerState.Reconnecting) _reconnects++;
            _state = state;
            _lastError = message;
            _nextAttemptAt = retryAt;
            Remember(new EtlError(DateTimeOffset.UtcNow, message, null));
        }
        EtlMetrics.Error(name, "delivery");
    }

    public void Failed(string message) { lock (_lock) { _state = RunnerState.Failed; _lastError = message; Remember(new EtlError(DateTimeOffset.UtcNow, message, null)); } }

    public EtlTaskStatsSnapshot Snapshot(long? lag)
    {
        lock (_lock)
            return new(name, _state, _lastEtag, lag, _sent, _processed, _filtered, _scriptErrors, _reconnects, _lastError,
                _lastBatchAt, _nextAttemptAt,
                new EtlTimeSpent(Math.Round(_read.TotalMilliseconds), Math.Round(_transform.TotalMilliseconds), Math.Round(_publish.TotalMilliseconds), Math.Round(_persist.TotalMilliseconds)),
                [.. _errors]);
    }

    private void Remember(EtlError e)
    {
        _errors.Enqueue(e);
        while (_errors.Count > KeptErrors) _errors.Dequeue();
    }
}
