using Magpie.Contracts.Indexes;
using Magpie.Embeddings.Connections;

namespace Magpie.Indexer.Definitions;

/// <summary>
/// Where index definitions are kept durably. Embedded: a file in the data directory. Kafka mode: the
/// compacted <c>magpie.indexes</c> topic, which every indexer and query process reads, so a definition
/// PUT on one process reaches all of them.
/// </summary>
public interface IIndexDefinitionLog : IAsyncDisposable
{
    /// <summary>
    /// Reads the definitions kept so far, calling <paramref name="apply"/> for each (null = deleted), and
    /// keeps calling it for later changes from any process. Returns once it has caught up with what existed at start.
    /// </summary>
    Task StartAsync(Action<string, IndexDefinition?> apply, CancellationToken ct);

    /// <summary>Keeps the change durably (null = delete); returns once <c>apply</c> has seen it here.</summary>
    Task WriteAsync(string name, IndexDefinition? definition, CancellationToken ct);

    /// <summary>Every definition an index has had, oldest first, as kept so far (from any process; empty when none).</summary>
    IReadOnlyList<IndexVersion> History(string name);

    /// <summary>Keeps an index's history durably (the whole list: the newest version last), before its definition is written.</summary>
    Task WriteHistoryAsync(string name, IReadOnlyList<IndexVersion> history, CancellationToken ct);

    /// <summary>
    /// Kafka mode: which definition version (fingerprint) each shard of an index's replacement has caught up at, as its indexer
    /// said (<see cref="WriteReadyAsync"/>); the replacement is promoted once every shard has. Embedded there is one shard, and
    /// the registry promotes without asking the log.
    /// </summary>
    IReadOnlyDictionary<int, string> Ready(string name) => new Dictionary<int, string>();

    Task WriteReadyAsync(string name, int shard, string version, CancellationToken ct) => Task.CompletedTask;

    /// <summary>
    /// Asks every process holding shards of the index to retry its failed documents (<see cref="RetryAsked"/> raised in each, this
    /// one included). Embedded: at once; Kafka mode: through <c>magpie.indexes</c>, so each indexer retries its own shards.
    /// </summary>
    Task WriteRetryAsync(string name, CancellationToken ct);

    event Action<string>? RetryAsked;

    /// <summary>
    /// The embedding connections kept beside the definitions (embedded: <c>connections.json</c>, mode 0600; Kafka mode:
    /// <c>connection:{name}</c> records of <c>magpie.indexes</c>), so every indexer and query process embeds with the same ones.
    /// </summary>
    EmbeddingConnections Connections { get; }

    /// <summary>Keeps a connection durably (null = delete); returns once <see cref="Connections"/> here has it.</summary>
    Task WriteConnectionAsync(string name, EmbeddingConnection? connection, CancellationToken ct);
}

/// <summary>One definition an index had (null: the index was deleted) and when it was set.</summary>
public sealed record IndexVersion(IndexDefinition? Definition, DateTimeOffset SetAt);
