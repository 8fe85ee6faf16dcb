using System.Diagnostics.Metrics;
using Magpie.EtlSinks.Runners;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>Where a sink's time went, in total: waiting for messages, running the script, writing to the store, dead-lettering, acknowledging.</summary>
public sealed record SinkTimeSpent(double ReceiveMs, double ScriptMs, double WriteMs, double DeadLetterMs, double AcknowledgeMs);

public sealed record SinkError(DateTimeOffset At, string Message, string? MessageId);

/// <summary>What <c>GET /sinks/{name}/stats</c> shows.</summary>
public sealed record QueueSinkStatsSnapshot(
    string Name, string State, IReadOnlyList<string> Sources, long? Lag, long MessagesReceived, long MessagesApplied, long Writes,
    long Redeliveries, long Skipped, long DeadLettered, long Reconnects, string? LastError, DateTimeOffset? LastBatchAt,
    DateTimeOffset? NextAttemptAt, SinkTimeSpent TimeSpent, IReadOnlyList<SinkError> RecentErrors) : IRunnerSnapshot;

/// <summary>
/// Live counters of one sink, written by its runner and read by HTTP requests; what they add to <c>/metrics</c>: messages per
/// outcome, writes and interruptions, per sink.
/// </summary>
public sealed class QueueSinkStats(string name, IReadOnlyList<string> sources) : RunnerStatus
{
    private static readonly Counter<long> MessagesCounter = RunnerMetrics.Meter.CreateCounter<long>("magpie.sink.messages", "{message}",
        "Messages a sink finished with, per sink and outcome (applied, redelivery, skipped, dead_lettered).");
    private static readonly Counter<long> WritesCounter = RunnerMetrics.Meter.CreateCounter<long>("magpie.sink.writes", "{write}",
        "Document writes (put, patch, delete) sinks made, per sink.");
    private static readonly Counter<long> InterruptionsCounter = RunnerMetrics.Meter.CreateCounter<long>("magpie.sink.interruptions", "{interruption}",
        "Times a sink lost its broker or the store and started over from what was acknowledged, per sink.");

    /// <summary>How a queue sink's gauges are named.</summary>
    public static readonly RunnerGauges Gauges = new("magpie.sink", "sink", "{message}", "Messages waiting in the broker for a sink.",
        "1 while a sink is running; its state label says what else it is doing (reconnecting, failed, disabled).");

    private long? _lag;
    private long _received, _applied, _writes, _redeliveries, _skipped, _deadLettered;
    private TimeSpan _receive, _script, _write, _deadLetter, _acknowledge;

    public void Lag(long? lag) { lock (Gate) _lag = lag; }

    /// <param name="applied">messages whose writes are now in the store</param>
    /// <param name="redeliveries">messages the store had applied before (a redelivery), acknowledged without writing again</param>
    /// <param name="skipped">messages whose script wrote nothing</param>
    public void Batch(int received, int applied, int writes, int redeliveries, int skipped, IReadOnlyList<(string MessageId, string Reason)> deadLettered)
    {
        lock (Gate)
        {
            _received += received; _applied += applied; _writes += writes; _redeliveries += redeliveries; _skipped += skipped;
            _deadLettered += deadLettered.Count;
            BatchDone();
            foreach (var (id, reason) in deadLettered.TakeLast(KeptErrors)) Remember(reason, id);
        }
        Count("applied", applied);
        Count("redelivery", redeliveries);
        Count("skipped", skipped);
        Count("dead_lettered", deadLettered.Count);
        if (writes > 0) WritesCounter.Add(writes, new KeyValuePair<string, object?>("sink", name));
    }

    public void Spent(TimeSpan receive = default, TimeSpan script = default, TimeSpan write = default, TimeSpan deadLetter = default, TimeSpan acknowledge = default)
    {
        lock (Gate) { _receive += receive; _script += script; _write += write; _deadLetter += deadLetter; _acknowledge += acknowledge; }
    }

    protected override void CountInterruption() => InterruptionsCounter.Add(1, new KeyValuePair<string, object?>("sink", name));

    private void Count(string outcome, int count)
    {
        if (count > 0) MessagesCounter.Add(count, new KeyValuePair<string, object?>("sink", name), new KeyValuePair<string, object?>("outcome", outcome));
    }

    public QueueSinkStatsSnapshot Snapshot()
    {
        lock (Gate)
        {
            var c = Common();
            return new(name, c.State, sources, _lag, _received, _applied, _writes, _redeliveries, _skipped, _deadLettered, c.Reconnects, c.LastError,
                c.LastBatchAt, c.NextAttemptAt,
                new SinkTimeSpent(Math.Round(_receive.TotalMilliseconds), Math.Round(_script.TotalMilliseconds), Math.Round(_write.TotalMilliseconds),
                    Math.Round(_deadLetter.TotalMilliseconds), Math.Round(_acknowledge.TotalMilliseconds)),
                [.. c.RecentErrors.Select(e => new SinkError(e.At, e.Message, e.Subject))]);
        }
    }
}
