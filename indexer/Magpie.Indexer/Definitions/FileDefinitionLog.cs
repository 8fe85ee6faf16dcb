using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Storage;

namespace Magpie.Indexer.Definitions;

/// <summary>Embedded mode: every definition in <c>{dataDir}/indexes/definitions.json</c>, replaced atomically on each change.</summary>
public sealed class FileDefinitionLog(string dataDir) : IIndexDefinitionLog
{
    private readonly string _path = Path.Combine(dataDir, "indexes", "definitions.json");
    private readonly Lock _lock = new();
    private Dictionary<string, IndexDefinition> _kept = [];
    private Action<string, IndexDefinition?> _apply = (_, _) => { };

    public Task StartAsync(Action<string, IndexDefinition?> apply, CancellationToken ct)
    {
        _apply = apply;
        if (File.Exists(_path))
            _kept = JsonSerializer.Deserialize<Dictionary<string, IndexDefinition>>(File.ReadAllBytes(_path), IndexDefinitionStore.Json) ?? [];
        foreach (var (name, definition) in _kept) apply(name, definition);
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

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;
}
