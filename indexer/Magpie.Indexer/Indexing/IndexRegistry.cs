using System.Security.Cryptography;
using System.Text;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Definitions;
using Magpie.Indexer.Lucene;
using Magpie.Scripting;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Indexing;

/// <summary>
/// One worker per defined index, kept in step with the definitions: a changed definition restarts its
/// worker (which rebuilds: the commit's fingerprint no longer matches), a deleted one stops and its files go.
/// The Lucene host (a JVM) starts with the first index, so a magpie without indexes needs no Java.
/// </summary>
public sealed class IndexRegistry(IndexDefinitionStore definitions, IChangeFeed feed, IndexerOptions options, ILoggerFactory logs)
    : IHostedService, IAsyncDisposable, IIndexWaiter
{
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly Dictionary<string, (IndexDefinition Definition, IndexWorker Worker)> _workers = [];
    private readonly ILogger _log = logs.CreateLogger("Magpie.Indexes");
    private LuceneHostProcess? _host;
    private string? _hostFailure;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        definitions.Changed += () => _ = ReconcileLoggedAsync();
        await ReconcileAsync();
    }

    public async Task StopAsync(CancellationToken cancellationToken) => await DisposeAsync();

    /// <summary>The running worker of an index (null if there is no such index, or Java is missing: see <see cref="HostFailure"/>).</summary>
    public IndexWorker? Worker(string name)
    {
        lock (_workers) return _workers.TryGetValue(name, out var w) ? w.Worker : null;
    }

    public async Task<bool> WaitForEtagAsync(long etag, TimeSpan timeout, CancellationToken ct = default)
    {
        List<IndexWorker> workers;
        lock (_workers) workers = _workers.Values.Select(w => w.Worker).ToList();
        var results = await Task.WhenAll(workers.Select(w => w.WaitForEtagAsync(etag, timeout, ct)));
        return results.All(r => r);
    }

    /// <summary>Why no index can run (Java or the Lucene jars missing), or null.</summary>
    public string? HostFailure => _hostFailure;

    public async Task ResetAsync(string name)
    {
        await _gate.WaitAsync();
        try
        {
            await StopWorkerAsync(name, deleteFiles: true);
        }
        finally { _gate.Release(); }
        await ReconcileAsync();
    }

    private async Task ReconcileLoggedAsync()
    {
        try { await ReconcileAsync(); }
        catch (Exception e) { _log.LogError(e, "index reconcile failed"); }
    }

    private async Task ReconcileAsync()
    {
        await _gate.WaitAsync();
        try
        {
            var current = definitions.Current;
            foreach (var name in _workers.Keys.ToList())
            {
                if (current.TryGetValue(name, out var d) && ReferenceEquals(d, _workers[name].Definition)) continue;
                await StopWorkerAsync(name, deleteFiles: !current.ContainsKey(name));
            }
            foreach (var (name, definition) in current)
            {
                if (_workers.ContainsKey(name)) continue;
                if (HostOrNull() is not { } host) continue;
                var worker = new IndexWorker(name, definition, feed, host, DirectoryOf(name), options.ScriptLimits, _log, options.BatchSize);
                lock (_workers) _workers[name] = (definition, worker);
                worker.Start();
            }
        }
        finally { _gate.Release(); }
    }

    private LuceneHostProcess? HostOrNull()
    {
        if (_host is not null) return _host;
        try
        {
            _host = LuceneHostProcess.Start(options.LuceneHeapMegabytes);
            _hostFailure = null;
        }
        catch (Exception e)
        {
            _hostFailure = e.Message;
            _log.LogError("indexes can't run: {Error}", e.Message);
        }
        return _host;
    }

    private async Task StopWorkerAsync(string name, bool deleteFiles)
    {
        (IndexDefinition, IndexWorker) entry;
        lock (_workers)
            if (!_workers.Remove(name, out entry)) entry = default;
        if (entry.Item2 is { } worker)
        {
            await worker.DisposeAsync();
            if (worker.Index is { } index) try { await index.CloseAsync(); } catch (LuceneException) { }
        }
        if (deleteFiles && Directory.Exists(DirectoryOf(name))) Directory.Delete(DirectoryOf(name), recursive: true);
    }

    /// <summary>Index names may hold '/', so the folder is the name made safe plus a short hash (two names never share one).</summary>
    private string DirectoryOf(string name) => Path.Combine(options.DataDir, "indexes",
        name.Replace('/', '_') + "-" + Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(name)))[..8].ToLowerInvariant());

    public async ValueTask DisposeAsync()
    {
        await _gate.WaitAsync();
        try
        {
            foreach (var name in _workers.Keys.ToList()) await StopWorkerAsync(name, deleteFiles: false);
            if (_host is not null) await _host.DisposeAsync();
            _host = null;
        }
        finally { _gate.Release(); }
    }
}
