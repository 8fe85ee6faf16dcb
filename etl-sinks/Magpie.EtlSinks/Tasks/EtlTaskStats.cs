using System.Diagnostics.Metrics;
using Magpie.EtlSinks.Runners;

namespace Magpie.EtlSinks.Tasks;

public sealed record EtlError(DateTimeOffset At, string Message, string? DocumentId);

/// <summary>Where a task's time went, in total: waiting for changes, running scripts, waiting for broker confirms, persisting its position.</summary>
public sealed record EtlTimeSpent(double ReadMs, double TransformMs, double PublishMs, double PersistMs);

/// <summary>What GET /etl/tasks/{name}/stats shows.</summary>
public sealed record EtlTaskStatsSnapshot(
    string Name, string State, long LastProcessedEtag, long? Lag, long MessagesSent, long DocumentsProcessed,
    long DocumentsFiltered, long ScriptErrors, long Reconnects, string? LastError, DateTimeOffset? LastBatchAt,
    DateTimeOffset? NextAttemptAt, EtlTimeSpent TimeSpent, IReadOnlyList<EtlError> RecentErrors) : IRunnerSnapshot;

/// <summary>
/// Live counters of one task, written by its runner and read by HTTP requests; what they add to <c>/metrics</c>: messages the
/// broker confirmed, documents transformed and errors (script, delivery), per task.
/// </summary>
public sealed class EtlTaskStats : RunnerStatus
{
    private readonly string _name;

    public EtlTaskStats(string name)
    {
        _name = name;
        // A task's error series exist at 0 from its start: "no errors" is a 0 on the dashboard, not "no data", and
        // increase() sees the first error (a series born at 1 has no increase).
        foreach (var kind in (string[])["script", "delivery"]) CountError(kind, 0);
    }

    private static readonly Counter<long> SentCounter = RunnerMetrics.Meter.CreateCounter<long>("magpie.etl.messages.sent", "{message}",
        "Messages the broker confirmed, per task.");
    private static readonly Counter<long> DocumentsCounter = RunnerMetrics.Meter.CreateCounter<long>("magpie.etl.documents", "{document}",
        "Changes a task's transforms ran on, per task.");
    private static readonly Counter<long> ErrorsCounter = RunnerMetrics.Meter.CreateCounter<long>("magpie.etl.errors", "{error}",
        "Script errors (kind=script) and delivery interruptions (kind=delivery), per task.");

    /// <summary>How an ETL task's gauges are named.</summary>
    public static readonly RunnerGauges Gauges = new("magpie.etl", "task", "{change}", "Changes of the feed a task has not published yet.",
        "1 while a task is running; its state label says what else it is doing (reconnecting, failed, disabled).");

    private long _lastEtag, _sent, _processed, _filtered, _scriptErrors;
    private TimeSpan _read, _transform, _publish, _persist;

    public void Resumed(EtlTaskPosition p) { lock (Gate) { _lastEtag = p.LastEtag; _sent = p.MessagesSent; _processed = p.DocumentsProcessed; } }

    public void Batch(long lastEtag, int documents, int filtered, int messages)
    {
        lock (Gate) { _lastEtag = lastEtag; _processed += documents; _filtered += filtered; _sent += messages; BatchDone(); }
        var tag = new KeyValuePair<string, object?>("task", _name);
        SentCounter.Add(messages, tag);
        DocumentsCounter.Add(documents, tag);
    }

    public void Spent(TimeSpan read = default, TimeSpan transform = default, TimeSpan publish = default, TimeSpan persist = default)
    {
        lock (Gate) { _read += read; _transform += transform; _publish += publish; _persist += persist; }
    }

    public void ScriptError(string documentId, string message)
    {
        lock (Gate) { _scriptErrors++; Remember(message, documentId); }
        CountError("script");
    }

    protected override void CountInterruption() => CountError("delivery");

    private void CountError(string kind, long count = 1) =>
        ErrorsCounter.Add(count, new KeyValuePair<string, object?>("task", _name), new KeyValuePair<string, object?>("kind", kind));

    public EtlTaskStatsSnapshot Snapshot(long? lag)
    {
        lock (Gate)
        {
            var c = Common();
            return new(_name, c.State, _lastEtag, lag, _sent, _processed, _filtered, _scriptErrors, c.Reconnects, c.LastError,
                c.LastBatchAt, c.NextAttemptAt,
                new EtlTimeSpent(Math.Round(_read.TotalMilliseconds), Math.Round(_transform.TotalMilliseconds), Math.Round(_publish.TotalMilliseconds), Math.Round(_persist.TotalMilliseconds)),
                [.. c.RecentErrors.Select(e => new EtlError(e.At, e.Message, e.Subject))]);
        }
    }
}
