using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Configuration;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.EtlSinks.Tasks;

/// <summary>
/// Keeps one runner per enabled task, in step with the configuration: a changed task or connection
/// restarts its runner (from the task's persisted position), a deleted task stops and forgets its position.
/// </summary>
public sealed class EtlSupervisor(EtlConfigStore config, IChangeFeed feed, EtlOptions options, ILoggerFactory logs) : IHostedService
{
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly Dictionary<string, (string Fingerprint, EtlTaskRunner Runner)> _runners = [];
    private readonly ILogger _log = logs.CreateLogger("Magpie.Etl");
    private bool _stopped;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        EtlMetrics.Observe(this);
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

    /// <summary>The task's live stats, or null if there is no such task.</summary>
    public EtlTaskStatsSnapshot? Stats(string name)
    {
        if (!config.Current.Tasks.TryGetValue(name, out var task)) return null;
        lock (_runners)
            if (_runners.TryGetValue(name, out var r)) return r.Runner.Snapshot();
        var state = task.Disabled ? EtlTaskState.Disabled : EtlTaskState.Starting;
        return new EtlTaskStatsSnapshot(name, state, 0, null, 0, 0, 0, 0, 0, null, null, null, new EtlTimeSpent(0, 0, 0, 0), []);
    }

    /// <summary>Every configured task's stats (for metrics).</summary>
    public IReadOnlyList<EtlTaskStatsSnapshot> AllStats() => config.Current.Tasks.Keys.Select(Stats).OfType<EtlTaskStatsSnapshot>().ToList();

    /// <summary>Publishes everything again from the beginning of the change feed.</summary>
    public async Task ResetAsync(string name)
    {
        await _gate.WaitAsync();
        try
        {
            await StopRunnerAsync(name);
            File.Delete(EtlTaskPosition.PathOf(options.DataDir, name));
        }
        finally { _gate.Release(); }
        await ReconcileAsync();
    }

    private async void ReconcileSafelyAsync()
    {
        try { await ReconcileAsync(); }
        catch (Exception e) { _log.LogError(e, "ETL reconcile failed"); }
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
                if (current.Tasks.TryGetValue(name, out var t) && !t.Disabled && Fingerprint(t, current) == _runners[name].Fingerprint) continue;
                await StopRunnerAsync(name);
                if (!current.Tasks.ContainsKey(name)) File.Delete(EtlTaskPosition.PathOf(options.DataDir, name));
            }
            foreach (var (name, task) in current.Tasks)
            {
                if (task.Disabled || _runners.ContainsKey(name) || !current.Connections.TryGetValue(task.Connection, out var connection)) continue;
                var runner = new EtlTaskRunner(name, task, connection, feed, options, _log);
                lock (_runners) _runners[name] = (Fingerprint(task, current), runner);
                runner.Start();
            }
        }
        finally { _gate.Release(); }
    }

    private async Task StopRunnerAsync(string name)
    {
        (string, EtlTaskRunner) entry;
        lock (_runners)
        {
            if (!_runners.Remove(name, out entry)) return;
        }
        await entry.Item2.DisposeAsync();
    }

    /// <summary>The task and its connection as JSON: what a runner was started with.</summary>
    private static string Fingerprint(EtlTaskDefinition task, EtlConfig config) =>
        JsonSerializer.Serialize(new { task, connection = config.Connections.GetValueOrDefault(task.Connection) }, EtlConfigStore.Json);
}
