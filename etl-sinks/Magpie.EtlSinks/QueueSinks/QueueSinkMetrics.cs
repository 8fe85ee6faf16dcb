using System.Diagnostics.Metrics;
using Magpie.EtlSinks.Tasks;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>What queue sinks report on <c>/metrics</c> (the sinks module's meter, <c>Magpie.Etl</c>).</summary>
public static class QueueSinkMetrics
{
    private static readonly Counter<long> Messages = EtlMetrics.Meter.CreateCounter<long>("magpie.sink.messages", "{message}",
        "Messages a sink finished with, per sink and outcome (applied, redelivery, skipped, dead_lettered).");
    private static readonly Counter<long> Writes = EtlMetrics.Meter.CreateCounter<long>("magpie.sink.writes", "{write}",
        "Document writes (put, patch, delete) sinks made, per sink.");
    private static readonly Counter<long> Interruptions = EtlMetrics.Meter.CreateCounter<long>("magpie.sink.interruptions", "{interruption}",
        "Times a sink lost its broker or the store and started over from what was acknowledged, per sink.");

    public static void Batch(string sink, int applied, int redeliveries, int skipped, int deadLettered, int writes)
    {
        var tag = new KeyValuePair<string, object?>("sink", sink);
        Add(sink, "applied", applied);
        Add(sink, "redelivery", redeliveries);
        Add(sink, "skipped", skipped);
        Add(sink, "dead_lettered", deadLettered);
        if (writes > 0) Writes.Add(writes, tag);
    }

    public static void Interrupted(string sink) => Interruptions.Add(1, new KeyValuePair<string, object?>("sink", sink));

    private static void Add(string sink, string outcome, int count)
    {
        if (count > 0) Messages.Add(count, new KeyValuePair<string, object?>("sink", sink), new KeyValuePair<string, object?>("outcome", outcome));
    }

    /// <summary>Gauges over the configured sinks; called once per process.</summary>
    public static void Observe(QueueSinkSupervisor supervisor)
    {
        EtlMetrics.Meter.CreateObservableGauge("magpie.sink.lag", () => supervisor.AllStats()
                .Where(s => s.Lag is not null)
                .Select(s => new Measurement<long>(s.Lag!.Value, new KeyValuePair<string, object?>("sink", s.Name))),
            "{message}", "Messages waiting in the broker for a sink.");
        EtlMetrics.Meter.CreateObservableGauge("magpie.sink.running", () => supervisor.AllStats()
                .Select(s => new Measurement<int>(s.State == RunnerState.Running ? 1 : 0,
                    new KeyValuePair<string, object?>("sink", s.Name), new KeyValuePair<string, object?>("state", s.State))),
            "{sink}", "1 while a sink is running; its state label says what else it is doing (reconnecting, failed, disabled).");
    }
}
