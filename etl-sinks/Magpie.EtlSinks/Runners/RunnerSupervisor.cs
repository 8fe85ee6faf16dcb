using Magpie.EtlSinks.Configuration;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.EtlSinks.Runners;

/// <summary>A runner the supervisor can start, stop and ask for its status.</summary>
public interface IRunner<out TSnapshot> : IAsyncDisposable
{
    void Start();

    TSnapshot Snapshot();
}

/// <summary>What every runner's status snapshot says, for the gauges.</summary>
public interface IRunnerSnapshot
{
    string Name { get; }
    string State { get; }
    long? Lag { get; }
}

/// <summary>
/// One kind of runner (ETL tasks, queue sinks), declared: its entries in the configuration, how one starts, what an entry
/// without a runner shows, what a removed entry leaves behind to forget, and how its gauges are named.
/// </summary>
public sealed record RunnerKind<TEntry, TSnapshot>(
    string Label,
    Func<EtlConfig, IReadOnlyDictionary<string, TEntry>> Entries,
    Func<string, TEntry, EtlConnection, IRunner<TSnapshot>> Start,
    Func<string, TEntry, TSnapshot> Idle,
    Action<string>? Forget,
    RunnerGauges Gauges) where TEntry : IRunnableEntry where TSnapshot : IRunnerSnapshot;

/// <summary>
/// Keeps one runner per enabled entry of one kind, in step with the configuration: a changed entry or connection restarts its
/// runner (from its persisted position, or from what the broker hands over again), a deleted one stops and is forgotten.
/// </summary>
public sealed class RunnerSupervisor<TEntry, TSnapshot> : IHostedService where TEntry : IRunnableEntry where TSnapshot : IRunnerSnapshot
{
    private readonly EtlConfigStore _config;
    private readonly RunnerKind<TEntry, TSnapshot> _kind;
    private readonly RunnerSet<IRunner<TSnapshot>> _runners;

    public RunnerSupervisor(EtlConfigStore config, RunnerKind<TEntry, TSnapshot> kind, ILogger log)
    {
        (_config, _kind) = (config, kind);
        _runners = new RunnerSet<IRunner<TSnapshot>>(log);
    }

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        RunnerMetrics.Observe(_kind.Gauges, () => AllStats().Cast<IRunnerSnapshot>());
        _config.Changed += _ => _runners.ReconcileSafely(ReconcileAsync);
        await ReconcileAsync();
    }

    public Task StopAsync(CancellationToken cancellationToken) => _runners.StopAllAsync(cancellationToken);

    /// <summary>The entry's live status, or null if there is no such entry.</summary>
    public TSnapshot? Stats(string name)
    {
        if (!_kind.Entries(_config.Current).TryGetValue(name, out var entry)) return default;
        return _runners.Get(name) is { } runner ? runner.Snapshot() : _kind.Idle(name, entry);
    }

    /// <summary>Every configured entry's status (for the gauges).</summary>
    public IReadOnlyList<TSnapshot> AllStats() => _kind.Entries(_config.Current).Keys.Select(Stats).OfType<TSnapshot>().ToList();

    /// <summary>Stops the entry's runner, forgets its position and starts it again: from the beginning.</summary>
    public async Task ResetAsync(string name)
    {
        await _runners.StopOneAsync(name, () => _kind.Forget?.Invoke(name));
        await ReconcileAsync();
    }

    private Task ReconcileAsync()
    {
        var current = _config.Current;
        return _runners.ReconcileAsync(_kind.Entries(current), current.Connections, (name, entry, connection) =>
        {
            var runner = _kind.Start(name, entry, connection);
            runner.Start();
            return runner;
        }, removed: _kind.Forget);
    }
}
