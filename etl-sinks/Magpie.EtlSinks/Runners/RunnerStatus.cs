namespace Magpie.EtlSinks.Runners;

/// <summary>One of a runner's recent errors; <paramref name="Subject"/> is the document or message it cost, if one.</summary>
public sealed record RunnerError(DateTimeOffset At, string Message, string? Subject);

/// <summary>What every runner's status shows, whatever it runs: its state, what last went wrong and when it tries again.</summary>
public sealed record RunnerCommon(string State, long Reconnects, string? LastError, DateTimeOffset? LastBatchAt, DateTimeOffset? NextAttemptAt,
    IReadOnlyList<RunnerError> RecentErrors);

/// <summary>
/// Live status of one runner, written by it and read by HTTP requests and the metrics. This part is what every runner shares
/// (state, interruptions, recent errors); an ETL task's and a queue sink's counters live in the subclasses, under <see cref="Gate"/>.
/// </summary>
public abstract class RunnerStatus
{
    /// <summary>How many recent errors a status keeps.</summary>
    protected const int KeptErrors = 20;
    protected readonly Lock Gate = new();
    private readonly Queue<RunnerError> _errors = new();
    private string _state = RunnerState.Starting;
    private string? _lastError;
    private long _reconnects;
    private DateTimeOffset? _lastBatchAt, _nextAttemptAt;

    public void Disabled() { lock (Gate) _state = RunnerState.Disabled; }

    public void Running() { lock (Gate) { _state = RunnerState.Running; _nextAttemptAt = null; } }

    /// <summary>The runner stopped: <paramref name="state"/> says whether it waits for a broker (or the store) or for a person; it retries at <paramref name="retryAt"/>.</summary>
    public void Interrupted(string state, string message, DateTimeOffset retryAt)
    {
        lock (Gate)
        {
            if (state == RunnerState.Reconnecting) _reconnects++;
            _state = state;
            _lastError = message;
            _nextAttemptAt = retryAt;
            Remember(message, null);
        }
        CountInterruption();
    }

    /// <summary>The runner cannot run until its definition changes (a script that does not compile, nothing to write to).</summary>
    public void Failed(string message) { lock (Gate) { _state = RunnerState.Failed; _lastError = message; Remember(message, null); } }

    /// <summary>Records an interruption in the metrics.</summary>
    protected abstract void CountInterruption();

    /// <summary>A batch is done; call under <see cref="Gate"/>.</summary>
    protected void BatchDone() => _lastBatchAt = DateTimeOffset.UtcNow;

    /// <summary>Keeps an error among the recent ones; call under <see cref="Gate"/>.</summary>
    protected void Remember(string message, string? subject)
    {
        _errors.Enqueue(new RunnerError(DateTimeOffset.UtcNow, message, subject));
        while (_errors.Count > KeptErrors) _errors.Dequeue();
    }

    /// <summary>The shared part of a snapshot; call under <see cref="Gate"/>.</summary>
    protected RunnerCommon Common() => new(_state, _reconnects, _lastError, _lastBatchAt, _nextAttemptAt, [.. _errors]);
}
