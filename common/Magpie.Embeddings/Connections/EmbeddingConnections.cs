using System.Collections.Concurrent;
using Magpie.Contracts;

namespace Magpie.Embeddings.Connections;

/// <summary>
/// The embedding connections this process knows (kept with the index definitions, so every indexer and query process has the
/// same), each with its embedder and its cache of query texts' vectors. No name: the built-in model.
/// </summary>
public sealed class EmbeddingConnections(RetryDelays? delays = null) : IDisposable
{
    private readonly ConcurrentDictionary<string, Known> _known = new(StringComparer.Ordinal);

    private sealed record Known(EmbeddingConnection Connection, OpenAiEmbedder Embedder, QueryEmbeddings Queries);

    public IReadOnlyDictionary<string, EmbeddingConnection> All => _known.ToDictionary(k => k.Key, k => k.Value.Connection);

    /// <summary>A connection set (null: removed); its texts' vectors are made anew from now on.</summary>
    public void Set(string name, EmbeddingConnection? connection)
    {
        if (connection is null) { if (_known.TryRemove(name, out var gone)) gone.Embedder.Dispose(); return; }
        var embedder = new OpenAiEmbedder(name, connection, delays);
        var known = new Known(connection, embedder, new QueryEmbeddings(embedder));
        _known.AddOrUpdate(name, known, (_, old) => { old.Embedder.Dispose(); return known; });
    }

    /// <summary>The embedder of a connection (null: the built-in model).</summary>
    public ITextEmbedder For(string? name) => name is null ? BuiltInModel.Shared : Find(name).Embedder;

    /// <summary>The query-text cache of a connection (null: the built-in model's).</summary>
    public QueryEmbeddings QueriesFor(string? name) => name is null ? QueryEmbeddings.BuiltIn : Find(name).Queries;

    private Known Find(string name) => _known.TryGetValue(name, out var known) ? known
        : throw new EmbeddingRefusedException($"there is no embedding connection '{name}' (PUT /embeddings/connections/{name} makes one)");

    public void Dispose()
    {
        foreach (var known in _known.Values) known.Embedder.Dispose();
        _known.Clear();
    }
}
