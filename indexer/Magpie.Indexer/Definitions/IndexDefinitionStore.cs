using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Storage;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

namespace Magpie.Indexer.Definitions;

/// <summary>A definition the store refused: the HTTP status, the message, and for a script error where it is.</summary>
public sealed class IndexDefinitionException(int status, string message, ScriptSyntaxException? script = null) : Exception(message)
{
    public int Status { get; } = status;
    public ScriptSyntaxException? Script { get; } = script;
}

/// <summary>
/// Index definitions by name, durable in <c>{dataDir}/indexes/definitions.json</c> (replaced atomically).
/// A definition is validated before it is kept: maps compile (arrow functions included), field options
/// are known, no reduce yet.
/// </summary>
public sealed partial class IndexDefinitionStore
{
    public static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web) { WriteIndented = true };

    private readonly string _path;
    private readonly Lock _lock = new();
    private IReadOnlyDictionary<string, IndexDefinition> _definitions;

    public IndexDefinitionStore(string dataDir)
    {
        _path = Path.Combine(dataDir, "indexes", "definitions.json");
        _definitions = File.Exists(_path)
            ? JsonSerializer.Deserialize<Dictionary<string, IndexDefinition>>(File.ReadAllBytes(_path), Json) ?? []
            : new Dictionary<string, IndexDefinition>();
    }

    public event Action? Changed;

    public IReadOnlyDictionary<string, IndexDefinition> Current => Volatile.Read(ref _definitions);

    public void Put(string name, IndexDefinition definition, ScriptLimits limits)
    {
        if (!NamePattern().IsMatch(name))
            throw new IndexDefinitionException(400, $"'{name}' is not a valid index name: 1-100 letters, digits, '/', '.', '_' or '-', starting with a letter or digit, not ending in /stats or /reset");
        if (definition.Reduce is not null)
            throw new IndexDefinitionException(400, "\"reduce\" is not supported yet (map/reduce indexes arrive with the map/reduce work); define a map index");
        foreach (var (field, options) in definition.Fields)
            if (options.Indexing is not (IndexFieldOptions.Search or IndexFieldOptions.Exact or IndexFieldOptions.No))
                throw new IndexDefinitionException(400, $"fields.{field}.indexing must be \"search\", \"exact\" or \"no\", got '{options.Indexing}'");
        try { MapScript.Compile(definition.Maps, limits).Dispose(); }
        catch (ScriptSyntaxException e) { throw new IndexDefinitionException(400, e.Message, e); }
        Update(d => new Dictionary<string, IndexDefinition>(d) { [name] = definition });
    }

    public void Delete(string name) => Update(d =>
    {
        if (!d.ContainsKey(name)) throw new IndexDefinitionException(404, $"index '{name}' does not exist");
        var copy = new Dictionary<string, IndexDefinition>(d);
        copy.Remove(name);
        return copy;
    });

    private void Update(Func<IReadOnlyDictionary<string, IndexDefinition>, Dictionary<string, IndexDefinition>> change)
    {
        lock (_lock)
        {
            var next = change(_definitions);
            DurableFile.Write(_path, JsonSerializer.SerializeToUtf8Bytes(next, Json));
            Volatile.Write(ref _definitions, next);
        }
        Changed?.Invoke();
    }

    [GeneratedRegex("^(?!.*/(stats|reset)$)[A-Za-z0-9][A-Za-z0-9/._-]{0,99}$")]
    private static partial Regex NamePattern();
}
