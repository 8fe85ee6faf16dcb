using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Tasks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// Keeps one runner per enabled sink, in step with the configuration: a changed sink or connection restarts its runner (the
/// broker hands over what was not acknowledged), a deleted sink stops. <paramref name="writer"/> is null where no store is
/// reachable (a sinks process without IngestUrl): sinks then say so in their stats.
/// </summary>
public sealed class QueueSinkSupervisor(EtlConfigStore config, IMessageWriter? writer, EtlOptions options, ILoggerFactory logs) : IHostedService
{
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly Dictionary<string, (string Fingerprint, QueueSinkRunner Runner)> _runners = [];
    private readonly ILogger _log = logs.CreateLogger("Magpie.Sinks");
    private bool _stopped;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        QueueSinkMetrics.Observe(this);
        config.Changed += _ => ReconcileSafelyAsync();
        await ReconcileAsync();
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken);
        try
        {
            _stopped = true;
            foreach (var (_, runner) in _runners.Values) await runner.DisposeAsync();
            _runners.Clear();
        }
        finally { _gate.Release(); }
    }

    /// <summary>The sink's live stats, or null if there is no such sink.</summary>
    public QueueSinkStatsSnapshot? Stats(string name)
    {
        if (!config.Current.Sinks.TryGetValue(name, out var sink)) return null;
        lock (_runners)
            if (_runners.TryGetValue(name, out var r)) return r.Runner.Stats.Snapshot();
        var idle = new QueueSinkStats(name, sink.Sources);
        if (sink.Disabled) idle.Disabled();
        return idle.Snapshot();
    }

    public IReadOnlyList<QueueSinkStatsSnapshot> AllStats() => config.Current.Sinks.Keys.Select(Stats).OfType<QueueSinkStatsSnapshot>().ToList();

    private async void ReconcileSafelyAsync()
    {
        try { await ReconcileAsync(); }
        catch (Exception e) { _log.LogError(e, "queue sink reconcile failed"); }
    }

    private async Task ReconcileAsync()
    {
        await _gate.WaitAsync();
        try
        {
            if (_stopped) return;
            var current = config.Current;
            foreach (var name in _runners.Keys.ToList())
            {
                if (current.Sinks.TryGetValue(name, out var s) && !s.Disabled && Fingerprint(s, current) == _runners[name].Fingerprint) continue;
                (string, QueueSinkRunner) entry;
                lock (_runners) _runners.Remove(name, out entry);
                await entry.Item2.DisposeAsync();
            }
            foreach (var (name, sink) in current.Sinks)
            {
                if (sink.Disabled || _runners.ContainsKey(name) || !current.Connections.TryGetValue(sink.Connection, out var connection)) continue;
                var runner = new QueueSinkRunner(name, sink, connection, writer, options, _log);
                lock (_runners) _runners[name] = (Fingerprint(sink, current), runner);
                runner.Start();
            }
        }
        finally { _gate.Release(); }
    }

    private static string Fingerprint(QueueSinkDefinition sink, EtlConfig config) =>
        JsonSerializer.Serialize(new { sink, connection = config.Connections.GetValueOrDefault(sink.Connection) }, EtlConfigStore.Json);
}
