using System.Text.Json;
using Magpie.EtlSinks.Configuration;
using Microsoft.Extensions.Logging;

namespace Magpie.EtlSinks.Runners;

/// <summary>
/// One running runner per enabled entry of the configuration (ETL tasks, queue sinks), kept in step with it: an entry whose
/// definition or connection changed is stopped and started again, a removed or disabled one is stopped. Reconciles one at a
/// time; <see cref="StopAllAsync"/> stops them for good.
/// </summary>
public sealed class RunnerSet<TRunner>(ILogger log) where TRunner : IAsyncDisposable
{
    /// <summary>What should run: the entry's name, what it was started with (any change restarts it) and how to start it.</summary>
    private sealed record Wanted(string Name, string Fingerprint, Func<TRunner> Start);

    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly Dictionary<string, (string Fingerprint, TRunner Runner)> _runners = [];
    private bool _stopped;

    /// <summary>The runner of <paramref name="name"/>, if one runs.</summary>
    public TRunner? Get(string name)
    {
        lock (_runners) return _runners.TryGetValue(name, out var r) ? r.Runner : default;
    }

    /// <summary>The entry and its connection as JSON: what a runner was started with.</summary>
    private static string Fingerprint(object definition, EtlConnection? connection) =>
        JsonSerializer.Serialize(new { definition, connection }, EtlConfigStore.Json);

    /// <summary>
    /// Runs the enabled <paramref name="entries"/> whose connection exists, each started by <paramref name="start"/>; stops the rest
    /// (calling <paramref name="removed"/> for names no longer configured).
    /// </summary>
    public Task ReconcileAsync<TEntry>(IReadOnlyDictionary<string, TEntry> entries, IReadOnlyDictionary<string, EtlConnection> connections,
        Func<string, TEntry, EtlConnection, TRunner> start, Action<string>? removed = null) where TEntry : IRunnableEntry
    {
        var wanted = entries
            .Where(e => !e.Value.Disabled && connections.ContainsKey(e.Value.Connection))
            .Select(e =>
            {
                var connection = connections[e.Value.Connection];
                return new Wanted(e.Key, Fingerprint(e.Value, connection), () => start(e.Key, e.Value, connection));
            }).ToList();
        return ReconcileAsync(wanted, entries.ContainsKey, removed);
    }

    /// <summary>Stops what is no longer wanted as it runs (calling <paramref name="removed"/> for names no longer configured) and starts what is missing.</summary>
    private async Task ReconcileAsync(IReadOnlyList<Wanted> wanted, Func<string, bool> configured, Action<string>? removed = null)
    {
        await _gate.WaitAsync();
        try
        {
            if (_stopped) return;
            var byName = wanted.ToDictionary(w => w.Name, StringComparer.Ordinal);
            foreach (var name in _runners.Keys.ToList())
            {
                if (byName.TryGetValue(name, out var w) && w.Fingerprint == _runners[name].Fingerprint) continue;
                await StopAsync(name);
                if (!configured(name)) removed?.Invoke(name);
            }
            foreach (var w in wanted)
            {
                if (_runners.ContainsKey(w.Name)) continue;
                var runner = w.Start();
                lock (_runners) _runners[w.Name] = (w.Fingerprint, runner);
            }
        }
        finally { _gate.Release(); }
    }

    /// <summary>Stops one runner, while holding the gate (<paramref name="then"/> runs before the next reconcile can start it again).</summary>
    public async Task StopOneAsync(string name, Action then)
    {
        await _gate.WaitAsync();
        try
        {
            await StopAsync(name);
            then();
        }
        finally { _gate.Release(); }
    }

    public async void ReconcileSafely(Func<Task> reconcile)
    {
        try { await reconcile(); }
        catch (Exception e) { log.LogError(e, "reconciling runners with the configuration failed"); }
    }

    public async Task StopAllAsync(CancellationToken ct)
    {
        await _gate.WaitAsync(ct);
        try
        {
            _stopped = true;
            foreach (var (_, runner) in _runners.Values) await runner.DisposeAsync();
            _runners.Clear();
        }
        finally { _gate.Release(); }
    }

    private async Task StopAsync(string name)
    {
        (string, TRunner) entry;
        lock (_runners)
        {
            if (!_runners.Remove(name, out entry)) return;
        }
        await entry.Item2.DisposeAsync();
    }
}
