using Magpie.Contracts.Indexes;

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
}

/// <summary>One definition an index had (null: the index was deleted) and when it was set.</summary>
public sealed record IndexVersion(IndexDefinition? Definition, DateTimeOffset SetAt);
