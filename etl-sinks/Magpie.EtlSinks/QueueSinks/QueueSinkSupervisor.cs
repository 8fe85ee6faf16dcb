using Magpie.Contracts.Documents;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Tasks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// Keeps one runner per enabled sink, in step with the configuration: a changed sink or connection restarts its runner (the
/// broker hands over what was not acknowledged), a deleted sink stops. The writer is null where no store is reachable (a
/// sinks process without IngestUrl): sinks then say so in their stats.
/// </summary>
public sealed class QueueSinkSupervisor : IHostedService
{
    private readonly EtlConfigStore _config;
    private readonly IMessageWriter? _writer;
    private readonly EtlOptions _options;
    private readonly ILogger _log;
    private readonly RunnerSet<QueueSinkRunner> _runners;

    public QueueSinkSupervisor(EtlConfigStore config, IMessageWriter? writer, EtlOptions options, ILoggerFactory logs)
    {
        (_config, _writer, _options, _log) = (config, writer, options, logs.CreateLogger("Magpie.Sinks"));
        _runners = new RunnerSet<QueueSinkRunner>(_log);
    }

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        QueueSinkMetrics.Observe(this);
        _config.Changed += _ => _runners.ReconcileSafely(ReconcileAsync);
        await ReconcileAsync();
    }

    public Task StopAsync(CancellationToken cancellationToken) => _runners.StopAllAsync(cancellationToken);

    /// <summary>The sink's live stats, or null if there is no such sink.</summary>
    public QueueSinkStatsSnapshot? Stats(string name)
    {
        if (!_config.Current.Sinks.TryGetValue(name, out var sink)) return null;
        if (_runners.Get(name) is { } runner) return runner.Stats.Snapshot();
        var idle = new QueueSinkStats(name, sink.Sources);
        if (sink.Disabled) idle.Disabled();
        return idle.Snapshot();
    }

    public IReadOnlyList<QueueSinkStatsSnapshot> AllStats() => _config.Current.Sinks.Keys.Select(Stats).OfType<QueueSinkStatsSnapshot>().ToList();

    private Task ReconcileAsync()
    {
        var current = _config.Current;
        return _runners.ReconcileAsync(current.Sinks, current.Connections, (name, sink, connection) =>
        {
            var runner = new QueueSinkRunner(name, sink, connection, _writer, _options, _log);
            runner.Start();
            return runner;
        });
    }
}
