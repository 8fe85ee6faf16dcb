namespace Magpie.Contracts.Indexes;

/// <summary>The index definitions by name (the indexer's definition store), as the query side reads and extends them.</summary>
public interface IIndexDefinitions
{
    IReadOnlyDictionary<string, IndexDefinition> Current { get; }

    /// <summary>Validates and keeps a definition durably (with the default script limits); refused with <see cref="IndexDefinitionException"/>.</summary>
    Task PutAsync(string name, IndexDefinition definition, CancellationToken ct = default);
}

/// <summary>A definition the store refused: the HTTP status, the message, and for a script error where it is.</summary>
public sealed class IndexDefinitionException(int status, string message, int? line = null, int? column = null, Exception? inner = null)
    : Exception(message, inner)
{
    public int Status { get; } = status;
    public int? Line { get; } = line;
    public int? Column { get; } = column;
}
