using System.Diagnostics.Metrics;

namespace Magpie.EtlSinks.Runners;

/// <summary>How one kind of runner's gauges are named: <c>{Prefix}.lag</c> and <c>{Prefix}.running</c>, labelled by <c>Label</c>.</summary>
public sealed record RunnerGauges(string Prefix, string Label, string LagUnit, string LagDescription, string RunningDescription);

/// <summary>
/// The sinks module's meter (<c>Magpie.Etl</c>) and the gauges every kind of runner has: its lag and whether it is running.
/// The counters of each kind live beside its status.
/// </summary>
public static class RunnerMetrics
{
    public const string MeterName = "Magpie.Etl";
    internal static readonly Meter Meter = new(MeterName);

    /// <summary>Gauges over one kind's runners; called once per supervisor.</summary>
    public static void Observe(RunnerGauges gauges, Func<IEnumerable<IRunnerSnapshot>> snapshots)
    {
        Meter.CreateObservableGauge(gauges.Prefix + ".lag", () => snapshots()
                .Where(s => s.Lag is not null)
                .Select(s => new Measurement<long>(s.Lag!.Value, new KeyValuePair<string, object?>(gauges.Label, s.Name))),
            gauges.LagUnit, gauges.LagDescription);
        Meter.CreateObservableGauge(gauges.Prefix + ".running", () => snapshots()
                .Select(s => new Measurement<int>(s.State == RunnerState.Running ? 1 : 0,
                    new KeyValuePair<string, object?>(gauges.Label, s.Name), new KeyValuePair<string, object?>("state", s.State))),
            "{" + gauges.Label + "}", gauges.RunningDescription);
    }
}
