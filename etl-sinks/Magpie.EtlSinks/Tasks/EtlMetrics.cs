using System.Diagnostics.Metrics;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.Tasks;

/// <summary>
/// What the sinks report on <c>/metrics</c> (meter <c>Magpie.Etl</c>): messages confirmed by the broker, errors, and,
/// when scraped, each task's lag behind the change feed and whether it is running.
/// </summary>
public static class EtlMetrics
{
    public const string MeterName = "Magpie.Etl";
    internal static readonly Meter Meter = new(MeterName);

    private static readonly Counter<long> Sent = Meter.CreateCounter<long>("magpie.etl.messages.sent", "{message}",
        "Messages the broker confirmed, per task.");
    private static readonly Counter<long> Documents = Meter.CreateCounter<long>("magpie.etl.documents", "{document}",
        "Changes a task's transforms ran on, per task.");
    private static readonly Counter<long> Errors = Meter.CreateCounter<long>("magpie.etl.errors", "{error}",
        "Script errors (kind=script) and delivery interruptions (kind=delivery), per task.");

    public static void Batch(string task, int documents, int messages)
    {
        var tag = new KeyValuePair<string, object?>("task", task);
        Sent.Add(messages, tag);
        Documents.Add(documents, tag);
    }

    public static void Error(string task, string kind) =>
        Errors.Add(1, new KeyValuePair<string, object?>("task", task), new KeyValuePair<string, object?>("kind", kind));

    /// <summary>Gauges over the running tasks; called once per process.</summary>
    public static void Observe(EtlSupervisor supervisor)
    {
        Meter.CreateObservableGauge("magpie.etl.lag", () => supervisor.AllStats()
                .Where(s => s.Lag is not null)
                .Select(s => new Measurement<long>(s.Lag!.Value, new KeyValuePair<string, object?>("task", s.Name))),
            "{change}", "Changes of the feed a task has not published yet.");
        Meter.CreateObservableGauge("magpie.etl.running", () => supervisor.AllStats()
                .Select(s => new Measurement<int>(s.State == RunnerState.Running ? 1 : 0,
                    new KeyValuePair<string, object?>("task", s.Name), new KeyValuePair<string, object?>("state", s.State))),
            "{task}", "1 while a task is running; its state label says what else it is doing (reconnecting, failed, disabled).");
    }
}
