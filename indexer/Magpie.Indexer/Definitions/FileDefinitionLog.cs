using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Storage;
using Magpie.Embeddings.Connections;

namespace Magpie.Indexer.Definitions;

/// <summary>
/// Embedded mode: every definition in <c>{dataDir}/indexes/definitions.json</c>, replaced atomically on each change; each index's
/// history in <c>history.json</c> beside it, the embedding connections in <c>connections.json</c> (mode 0600: they hold API keys).
/// </summary>
/// <param name="connections">The embedding connections' registry this log fills (a fresh one, without a vector cache, unless given).</param>
public sealed class FileDefinitionLog(string dataDir, EmbeddingConnections? connections = null) : IIndexDefinitionLog
{
    private readonly string _path = Path.Combine(dataDir, "indexes", "definitions.json");
    private readonly string _historyPath = Path.Combine(dataDir, "indexes", "history.json");
    private Dictionary<string, List<IndexVersion>> _history = [];
    private readonly Lock _lock = new();
    private Dictionary<string, IndexDefinition> _kept = [];
    private Action<string, IndexDefinition?> _apply = (_, _) => { };
    private readonly string _connectionsPath = Path.Combine(dataDir, "indexes", "connections.json");
    private Dictionary<string, EmbeddingConnection> _connections = [];

    public EmbeddingConnections Connections { get; } = connections ?? new();

    public Task WriteConnectionAsync(string name, EmbeddingConnection? connection, CancellationToken ct)
    {
        lock (_lock)
        {
            var next = new Dictionary<string, EmbeddingConnection>(_connections);
            if (connection is null) next.Remove(name); else next[name] = connection;
            DurableFile.Write(_connectionsPath, JsonSerializer.SerializeToUtf8Bytes(next, IndexDefinitionStore.Json), ownerOnly: true);   // API keys
            _connections = next;
            Connections.Set(name, connection);
        }
        return Task.CompletedTask;
    }

    public Task StartAsync(Action<string, IndexDefinition?> apply, CancellationToken ct)
    {
        _apply = apply;
        if (File.Exists(_path))
            _kept = JsonSerializer.Deserialize<Dictionary<string, IndexDefinition>>(File.ReadAllBytes(_path), IndexDefinitionStore.Json) ?? [];
        if (File.Exists(_historyPath))
            _history = JsonSerializer.Deserialize<Dictionary<string, List<IndexVersion>>>(File.ReadAllBytes(_historyPath), IndexDefinitionStore.Json) ?? [];
        if (File.Exists(_connectionsPath))
            _connections = JsonSerializer.Deserialize<Dictionary<string, EmbeddingConnection>>(File.ReadAllBytes(_connectionsPath), IndexDefinitionStore.Json) ?? [];
        foreach (var (name, connection) in _connections) Connections.Set(name, connection);
        foreach (var (name, definition) in _kept) apply(name, definition);
        return Task.CompletedTask;
    }

    public IReadOnlyList<IndexVersion> History(string name) { lock (_lock) return _history.TryGetValue(name, out var h) ? [.. h] : []; }

    public Task WriteHistoryAsync(string name, IReadOnlyList<IndexVersion> history, CancellationToken ct)
    {
        lock (_lock)
        {
            var next = new Dictionary<string, List<IndexVersion>>(_history) { [name] = [.. history] };
            DurableFile.Write(_historyPath, JsonSerializer.SerializeToUtf8Bytes(next, IndexDefinitionStore.Json));
            _history = next;
        }
        return Task.CompletedTask;
    }

    public Task WriteAsync(string name, IndexDefinition? definition, CancellationToken ct)
    {
        lock (_lock)
        {
            var next = new Dictionary<string, IndexDefinition>(_kept);
            if (definition is null) next.Remove(name); else next[name] = definition;
            DurableFile.Write(_path, JsonSerializer.SerializeToUtf8Bytes(next, IndexDefinitionStore.Json));
            _kept = next;
            _apply(name, definition);
        }
        return Task.CompletedTask;
    }

    public event Action<string>? RetryAsked;

    public Task WriteRetryAsync(string name, CancellationToken ct)
    {
        RetryAsked?.Invoke(name);
        return Task.CompletedTask;
    }

    public ValueTask DisposeAsync()
    {
        Connections.Dispose();
        return ValueTask.CompletedTask;
    }
}
