namespace Magpie.Contracts.Indexes;

/// <summary>The index definitions by name (the indexer's definition store), as the query side reads and extends them.</summary>
public interface IIndexDefinitions
{
    IReadOnlyDictionary<string, IndexDefinition> Current { get; }

    /// <summary>Validates and keeps a definition durably (with the default script limits); refused with <see cref="IndexDefinitionException"/>.</summary>
    Task PutAsync(string name, IndexDefinition definition, CancellationToken ct = default);
}

/// <summary>A definition the store refused: what kind of refusal, the message, and for a script error where it is.</summary>
public sealed class IndexDefinitionException(ErrorKind kind, string message, int? line = null, int? column = null, Exception? inner = null)
    : Exception(message, inner)
{
    public ErrorKind Kind { get; } = kind;
    public int? Line { get; } = line;
    public int? Column { get; } = column;
}
