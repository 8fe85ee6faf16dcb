using System.Text.Json;
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
    Func<EtlConfig, IReadOnlyDictionary<string, TEntry>> Entries,
    Func<string, TEntry, EtlConnection, IRunner<TSnapshot>> Start,
    Func<string, TEntry, TSnapshot> Idle,
    Action<string>? Forget,
    RunnerGauges Gauges) where TEntry : IRunnableEntry where TSnapshot : IRunnerSnapshot;

/// <summary>
/// Keeps one runner per enabled entry of one kind whose connection exists, in step with the configuration: an entry whose
/// definition or connection changed is stopped and started again (from its persisted position, or from what the broker hands
/// over again), a disabled one is stopped, a deleted one stopped and forgotten. Reconciles one at a time; stopping the
/// host stops them for good.
/// </summary>
public sealed class RunnerSupervisor<TEntry, TSnapshot>(EtlConfigStore config, RunnerKind<TEntry, TSnapshot> kind, ILogger log)
    : IHostedService where TEntry : IRunnableEntry where TSnapshot : IRunnerSnapshot
{
    private readonly SemaphoreSlim _gate = new(1, 1);
    /// <summary>Each running runner with what it was started with (its entry and connection as JSON: any change restarts it).</summary>
    private readonly Dictionary<string, (string Fingerprint, IRunner<TSnapshot> Runner)> _runners = [];
    private bool _stopped;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        RunnerMetrics.Observe(kind.Gauges, () => AllStats().Cast<IRunnerSnapshot>());
        config.Changed += _ => ReconcileSafely();
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

    /// <summary>The entry's live status, or null if there is no such entry.</summary>
    public TSnapshot? Stats(string name)
    {
        if (!kind.Entries(config.Current).TryGetValue(name, out var entry)) return default;
        IRunner<TSnapshot>? running;
        lock (_runners) running = _runners.TryGetValue(name, out var r) ? r.Runner : null;
        return running is not null ? running.Snapshot() : kind.Idle(name, entry);
    }

    /// <summary>Every configured entry's status (for the gauges).</summary>
    public IReadOnlyList<TSnapshot> AllStats() => kind.Entries(config.Current).Keys.Select(Stats).OfType<TSnapshot>().ToList();

    /// <summary>Stops the entry's runner, forgets its position and starts it again: from the beginning.</summary>
    public async Task ResetAsync(string name)
    {
        await _gate.WaitAsync();
        try
        {
            await StopOneAsync(name);
            kind.Forget?.Invoke(name);   // before the next reconcile can start it again
        }
        finally { _gate.Release(); }
        await ReconcileAsync();
    }

    private async void ReconcileSafely()
    {
        try { await ReconcileAsync(); }
        catch (Exception e) { log.LogError(e, "reconciling runners with the configuration failed"); }
    }

    /// <summary>Stops what is no longer wanted as it runs (forgetting names no longer configured) and starts what is missing.</summary>
    private async Task ReconcileAsync()
    {
        await _gate.WaitAsync();
        try
        {
            if (_stopped) return;
            var current = config.Current;
            var entries = kind.Entries(current);
            var wanted = entries
                .Where(e => !e.Value.Disabled && current.Connections.ContainsKey(e.Value.Connection))
                .ToDictionary(e => e.Key, e => (Entry: e.Value, Connection: current.Connections[e.Value.Connection]), StringComparer.Ordinal);
            string Fingerprint(TEntry entry, EtlConnection connection) =>
                JsonSerializer.Serialize(new { definition = entry, connection }, EtlConfigStore.Json);
            foreach (var name in _runners.Keys.ToList())
            {
                if (wanted.TryGetValue(name, out var w) && Fingerprint(w.Entry, w.Connection) == _runners[name].Fingerprint) continue;
                await StopOneAsync(name);
                if (!entries.ContainsKey(name)) kind.Forget?.Invoke(name);
            }
            foreach (var (name, (entry, connection)) in wanted)
            {
                if (_runners.ContainsKey(name)) continue;
                var runner = kind.Start(name, entry, connection);
                runner.Start();
                lock (_runners) _runners[name] = (Fingerprint(entry, connection), runner);
            }
        }
        finally { _gate.Release(); }
    }

    private async Task StopOneAsync(string name)
    {
        (string, IRunner<TSnapshot> Runner) entry;
        lock (_runners)
        {
            if (!_runners.Remove(name, out entry)) return;
        }
        await entry.Runner.DisposeAsync();
    }
}
