using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Contracts.Indexes;
using Magpie.Scripting;
using Microsoft.Extensions.Hosting;

namespace Magpie.Indexer.Definitions;

/// <summary>
/// Index definitions by name, validated before they are kept (maps compile, arrow functions included;
/// field options known; a reduce compiles and returns every map field) and kept in an <see cref="IIndexDefinitionLog"/>: a file when
/// embedded, the compacted <c>magpie.indexes</c> topic in Kafka mode. Starts (reads the log) before the
/// index registry, which is registered after it.
/// </summary>
/// <param name="compile">Checks a definition's scripts (throws <see cref="ScriptSyntaxException"/>): the wiring hands in the
/// indexer's compiler.</param>
public sealed partial class IndexDefinitionStore(IIndexDefinitionLog log, Action<IndexDefinition, ScriptLimits> compile) : IHostedService, IIndexDefinitions
{
    public static readonly JsonSerializerOptions Json = new(Magpie.Contracts.WireJson.Web) { WriteIndented = true };

    private readonly Lock _lock = new();
    private IReadOnlyDictionary<string, IndexDefinition> _definitions = new Dictionary<string, IndexDefinition>();

    public event Action? Changed;

    public IReadOnlyDictionary<string, IndexDefinition> Current => Volatile.Read(ref _definitions);

    public Task StartAsync(CancellationToken ct) => log.StartAsync(Apply, ct);

    public async Task StopAsync(CancellationToken ct) => await log.DisposeAsync();

    public async Task PutAsync(string name, IndexDefinition definition, ScriptLimits limits, CancellationToken ct = default)
    {
        if (!NamePattern().IsMatch(name))
            throw new IndexDefinitionException(400, $"'{name}' is not a valid index name: 1-100 letters, digits, '/', '.', '_' or '-', starting with a letter or digit, not ending in /stats, /reset or /history");
        foreach (var (field, options) in definition.Fields)
            if (options.Indexing is not (IndexFieldOptions.Search or IndexFieldOptions.Exact or IndexFieldOptions.No))
                throw new IndexDefinitionException(400, $"fields.{field}.indexing must be \"search\", \"exact\" or \"no\", got '{options.Indexing}'");
        try { compile(definition, limits); }
        catch (ScriptSyntaxException e) { throw new IndexDefinitionException(400, e.Message, e.Line, e.Column, e); }
        if (definition.OutputReduceToCollection is not null) OutputCollections.Check(name, definition, Current, limits);
        // The same definition again changes nothing: no rebuild, no history entry.
        if (Current.TryGetValue(name, out var current) && current.Fingerprint() == definition.Fingerprint()) return;
        await KeepAsync(name, definition, ct);
    }

    /// <summary>Every definition the index has had, oldest first (kept across restarts; a deleted index keeps its history).</summary>
    public IReadOnlyList<IndexVersion> History(string name) => log.History(name);

    /// <summary>At most this many versions are kept per index (the oldest go first).</summary>
    public const int MaxHistory = 100;

    /// <summary>The history first, then the definition: a crash between them leaves a version in the history that never took effect, never the reverse.</summary>
    private async Task KeepAsync(string name, IndexDefinition? definition, CancellationToken ct)
    {
        var history = log.History(name).Append(new IndexVersion(definition, DateTimeOffset.UtcNow)).TakeLast(MaxHistory).ToList();
        await log.WriteHistoryAsync(name, history, ct);
        await log.WriteAsync(name, definition, ct);
    }

    Task IIndexDefinitions.PutAsync(string name, IndexDefinition definition, CancellationToken ct) => PutAsync(name, definition, ScriptLimits.Default, ct);

    public async Task DeleteAsync(string name, CancellationToken ct = default)
    {
        if (!Current.ContainsKey(name)) throw new IndexDefinitionException(404, $"index '{name}' does not exist");
        await KeepAsync(name, null, ct);
    }

    /// <summary>A definition arrived from the log (this process's write or another's); null = deleted.</summary>
    private void Apply(string name, IndexDefinition? definition)
    {
        lock (_lock)
        {
            var next = new Dictionary<string, IndexDefinition>(_definitions);
            if (definition is null) next.Remove(name); else next[name] = definition;
            Volatile.Write(ref _definitions, next);
        }
        Changed?.Invoke();
    }

    [GeneratedRegex("^(?!.*/(stats|reset|history)$)[A-Za-z0-9][A-Za-z0-9/._-]{0,99}$")]
    private static partial Regex NamePattern();
}
