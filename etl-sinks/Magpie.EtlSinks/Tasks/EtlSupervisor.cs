using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Configuration;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.Tasks;

/// <summary>
/// Keeps one runner per enabled task, in step with the configuration: a changed task or connection
/// restarts its runner (from the task's persisted position), a deleted task stops and forgets its position.
/// </summary>
public sealed class EtlSupervisor : IHostedService
{
    private readonly EtlConfigStore _config;
    private readonly IChangeFeed _feed;
    private readonly EtlOptions _options;
    private readonly ILogger _log;
    private readonly RunnerSet<EtlTaskRunner> _runners;

    public EtlSupervisor(EtlConfigStore config, IChangeFeed feed, EtlOptions options, ILoggerFactory logs)
    {
        (_config, _feed, _options, _log) = (config, feed, options, logs.CreateLogger("Magpie.Etl"));
        _runners = new RunnerSet<EtlTaskRunner>(_log);
    }

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        EtlMetrics.Observe(this);
        _config.Changed += _ => _runners.ReconcileSafely(ReconcileAsync);
        await ReconcileAsync();
    }

    public Task StopAsync(CancellationToken cancellationToken) => _runners.StopAllAsync(cancellationToken);

    /// <summary>The task's live stats, or null if there is no such task.</summary>
    public EtlTaskStatsSnapshot? Stats(string name)
    {
        if (!_config.Current.Tasks.TryGetValue(name, out var task)) return null;
        if (_runners.Get(name) is { } runner) return runner.Snapshot();
        var state = task.Disabled ? RunnerState.Disabled : RunnerState.Starting;
        return new EtlTaskStatsSnapshot(name, state, 0, null, 0, 0, 0, 0, 0, null, null, null, new EtlTimeSpent(0, 0, 0, 0), []);
    }

    /// <summary>Every configured task's stats (for metrics).</summary>
    public IReadOnlyList<EtlTaskStatsSnapshot> AllStats() => _config.Current.Tasks.Keys.Select(Stats).OfType<EtlTaskStatsSnapshot>().ToList();

    /// <summary>Publishes everything again from the beginning of the change feed.</summary>
    public async Task ResetAsync(string name)
    {
        await _runners.StopOneAsync(name, () => ForgetPosition(name));
        await ReconcileAsync();
    }

    private Task ReconcileAsync()
    {
        var current = _config.Current;
        return _runners.ReconcileAsync(current.Tasks, current.Connections, (name, task, connection) =>
        {
            var runner = new EtlTaskRunner(name, task, connection, _feed, _options, _log);
            runner.Start();
            return runner;
        }, removed: ForgetPosition);
    }

    private void ForgetPosition(string name) => File.Delete(EtlTaskPosition.PathOf(_options.DataDir, name));
}
