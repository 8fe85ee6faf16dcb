using Magpie.Contracts;
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
/// <remarks>
/// Each index has the definition that serves queries (<see cref="Current"/>) and, while a changed definition is built beside it,
/// its replacement (<see cref="Pending"/>, kept under the key <c>next:{name}</c>). <see cref="PromoteAsync"/> makes the replacement
/// the current one: it writes the replacement under the index's own key, and a replacement equal to the current definition is no
/// replacement — so two indexers promoting at once, or a promotion racing a newer PUT, never lose the newer definition.
/// </remarks>
/// <param name="compile">Checks a definition's scripts (throws <see cref="ScriptSyntaxException"/>): the wiring hands in the
/// indexer's compiler.</param>
public sealed partial class IndexDefinitionStore(IIndexDefinitionLog log, Action<IndexDefinition, ScriptLimits> compile) : IHostedService, IIndexDefinitions
{
    public static readonly JsonSerializerOptions Json = new(Magpie.Contracts.WireJson.Web) { WriteIndented = true };

    private readonly Lock _lock = new();
    private IReadOnlyDictionary<string, IndexDefinition> _definitions = new Dictionary<string, IndexDefinition>();
    private IReadOnlyDictionary<string, IndexDefinition> _next = new Dictionary<string, IndexDefinition>();
    private const string NextPrefix = "next:";

    public event Action? Changed;

    /// <summary>The definitions that serve queries.</summary>
    public IReadOnlyDictionary<string, IndexDefinition> Current => Volatile.Read(ref _definitions);

    /// <summary>Replacements being built beside the current definitions (side by side), by index name.</summary>
    public IReadOnlyDictionary<string, IndexDefinition> Pending
    {
        get
        {
            var (current, next) = (Current, Volatile.Read(ref _next));
            return next.Where(n => current.TryGetValue(n.Key, out var c) && c.Fingerprint() != n.Value.Fingerprint()).ToDictionary();
        }
    }

    public Task StartAsync(CancellationToken ct) => log.StartAsync(Apply, ct);

    /// <summary>The embedding connections, kept with the definitions (every indexer and query process has the same).</summary>
    public Embeddings.Connections.EmbeddingConnections Connections => log.Connections;

    /// <summary>Keeps an embedding connection (null: deletes it) once its name and settings are valid.</summary>
    public Task PutConnectionAsync(string name, Embeddings.Connections.EmbeddingConnection? connection, CancellationToken ct)
    {
        if (Embeddings.Connections.EmbeddingConnection.NameProblem(name) is { } bad) throw new IndexDefinitionException(ErrorKind.Invalid, bad);
        if (connection?.Problems().ToList() is { Count: > 0 } problems) throw new IndexDefinitionException(ErrorKind.Invalid, string.Join("; ", problems));
        if (connection is null && !Connections.All.ContainsKey(name)) throw new IndexDefinitionException(ErrorKind.NotFound, $"there is no embedding connection '{name}'");
        return log.WriteConnectionAsync(name, connection, ct);
    }

    public async Task StopAsync(CancellationToken ct) => await log.DisposeAsync();

    public async Task PutAsync(string name, IndexDefinition definition, ScriptLimits limits, CancellationToken ct = default)
    {
        if (!NamePattern().IsMatch(name))
            throw new IndexDefinitionException(ErrorKind.Invalid, $"'{name}' is not a valid index name: 1-100 letters, digits, '/', '.', '_' or '-', starting with a letter or digit, no empty, '.' or '..' segment, not ending in /stats, /reset, /swap, /errors/retry or /history");
        foreach (var (field, options) in definition.Fields)
            if (options.Indexing is not (IndexFieldOptions.Search or IndexFieldOptions.Exact or IndexFieldOptions.No))
                throw new IndexDefinitionException(ErrorKind.Invalid, $"fields.{field}.indexing must be \"search\", \"exact\" or \"no\", got '{options.Indexing}'");
            else if (options.Vector is { } vector && (vector.Dimensions is < 1 or > VectorFieldOptions.MaxDimensions || vector.Quantization is not (VectorFieldOptions.None or VectorFieldOptions.Int8 or VectorFieldOptions.Binary)))
                throw new IndexDefinitionException(ErrorKind.Invalid, $"fields.{field}.vector: dimensions 1 to {VectorFieldOptions.MaxDimensions:N0}, quantization \"none\", \"int8\" or \"binary\"");
        try { compile(definition, limits); }
        catch (ScriptSyntaxException e) { throw new IndexDefinitionException(ErrorKind.Invalid, e.Message, e.Line, e.Column, e); }
        if (definition.OutputReduceToCollection is not null) OutputCollections.Check(name, definition, Current, limits);
        var fingerprint = definition.Fingerprint();
        if (!Current.TryGetValue(name, out var current))
        {
            await KeepAsync(name, definition, ct);   // a new index: nothing answers for it yet, it is built in place
            return;
        }
        var pending = Pending.GetValueOrDefault(name);
        // The same definition again changes nothing: no rebuild, no history entry. The current one put back while a replacement is
        // built cancels the replacement.
        if (current.Fingerprint() == fingerprint)
        {
            if (pending is not null) await log.WriteAsync(NextPrefix + name, null, ct);
            return;
        }
        if (pending?.Fingerprint() == fingerprint) return;
        await KeepAsync(NextPrefix + name, definition, ct);
    }

    /// <summary>
    /// Makes the replacement of <paramref name="name"/> whose fingerprint is <paramref name="version"/> the current definition;
    /// false when that is not the replacement (anymore).
    /// </summary>
    public async Task<bool> PromoteAsync(string name, string version, CancellationToken ct = default)
    {
        if (Pending.GetValueOrDefault(name) is not { } next || next.Fingerprint() != version) return false;
        await log.WriteAsync(name, next, ct);
        return true;
    }

    /// <summary>Raised (in every process holding the index's shards) when its failed documents are to be retried.</summary>
    public event Action<string>? RetryAsked
    {
        add => log.RetryAsked += value;
        remove => log.RetryAsked -= value;
    }

    /// <summary>Asks every indexer of the index to retry its failed documents (<c>POST /indexes/{name}/errors/retry</c>).</summary>
    public Task RetryAsync(string name, CancellationToken ct) =>
        Current.ContainsKey(name) ? log.WriteRetryAsync(name, ct) : throw new IndexDefinitionException(ErrorKind.NotFound, $"index '{name}' does not exist");

    /// <summary>Kafka mode: which version each shard of <paramref name="name"/> said was caught up (by shard number).</summary>
    public IReadOnlyDictionary<int, string> Ready(string name) => log.Ready(name);

    /// <summary>Kafka mode: says that this indexer's <paramref name="shard"/> of <paramref name="name"/> at <paramref name="version"/> has caught up.</summary>
    public Task ReadyAsync(string name, int shard, string version, CancellationToken ct) => log.WriteReadyAsync(name, shard, version, ct);

    /// <summary>Every definition the index has had, oldest first (kept across restarts; a deleted index keeps its history).</summary>
    public IReadOnlyList<IndexVersion> History(string name) => log.History(name);

    /// <summary>At most this many versions are kept per index (the oldest go first).</summary>
    public const int MaxHistory = 100;

    /// <summary>The history first, then the definition: a crash between them leaves a version in the history that never took effect, never the reverse.</summary>
    private async Task KeepAsync(string key, IndexDefinition? definition, CancellationToken ct)
    {
        var name = key.StartsWith(NextPrefix, StringComparison.Ordinal) ? key[NextPrefix.Length..] : key;
        var history = log.History(name).Append(new IndexVersion(definition, DateTimeOffset.UtcNow)).TakeLast(MaxHistory).ToList();
        await log.WriteHistoryAsync(name, history, ct);
        await log.WriteAsync(key, definition, ct);
    }

    Task IIndexDefinitions.PutAsync(string name, IndexDefinition definition, CancellationToken ct) => PutAsync(name, definition, ScriptLimits.Default, ct);

    public async Task DeleteAsync(string name, CancellationToken ct = default)
    {
        if (!Current.ContainsKey(name)) throw new IndexDefinitionException(ErrorKind.NotFound, $"index '{name}' does not exist");
        if (Volatile.Read(ref _next).ContainsKey(name)) await log.WriteAsync(NextPrefix + name, null, ct);
        await KeepAsync(name, null, ct);
    }

    /// <summary>A definition arrived from the log (this process's write or another's); null = deleted.</summary>
    private void Apply(string key, IndexDefinition? definition)
    {
        lock (_lock)
        {
            var isNext = key.StartsWith(NextPrefix, StringComparison.Ordinal);
            var next = new Dictionary<string, IndexDefinition>(isNext ? _next : _definitions);
            var name = isNext ? key[NextPrefix.Length..] : key;
            if (definition is null) next.Remove(name); else next[name] = definition;
            if (isNext) Volatile.Write(ref _next, next); else Volatile.Write(ref _definitions, next);
        }
        Changed?.Invoke();
    }

    // No "." or ".." segment and no empty one: a browser or proxy would normalise such a name in a path into another route.
    [GeneratedRegex(@"^(?!.*/(stats|reset|history|swap|errors/retry)$)(?!(.*/)?\.{1,2}(/|$))(?!.*//)(?!.*/$)[A-Za-z0-9][A-Za-z0-9/._-]{0,99}$")]
    private static partial Regex NamePattern();
}
