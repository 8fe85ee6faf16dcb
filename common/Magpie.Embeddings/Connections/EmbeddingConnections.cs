using System.Collections.Concurrent;
using Magpie.Contracts;

namespace Magpie.Embeddings.Connections;

/// <summary>
/// The embedding connections this process knows (kept with the index definitions, so every indexer and query process has the
/// same), each with its embedder and its cache of query texts' vectors. No name: the built-in model.
/// </summary>
/// <param name="cache">Where indexing keeps the vectors it made, per model, and how many bytes at most (null: nothing kept).</param>
public sealed class EmbeddingConnections(RetryDelays? delays = null, (string Folder, long Bytes)? cache = null) : IDisposable
{
    private readonly ConcurrentDictionary<string, Known> _known = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, Lazy<Caching.EmbeddingCache?>> _caches = new(StringComparer.Ordinal);
    private ITextEmbedder? _builtIn;
    private Caching.IEmbeddingCacheShare? _share;

    /// <summary>
    /// Kafka mode's indexers: each vector a cache keeps is published to the others, and before asking a model for a text the
    /// vectors shared before this process started are waited for (set before indexing starts).
    /// </summary>
    public void ShareThrough(Caching.IEmbeddingCacheShare share) => _share = share;

    private sealed record Known(EmbeddingConnection Connection, OpenAiEmbedder Embedder, ITextEmbedder Indexing, QueryEmbeddings Queries);

    public IReadOnlyDictionary<string, EmbeddingConnection> All => _known.ToDictionary(k => k.Key, k => k.Value.Connection);

    /// <summary>A connection set (null: removed); its texts' vectors are made anew from now on.</summary>
    public void Set(string name, EmbeddingConnection? connection)
    {
        if (connection is null) { if (_known.TryRemove(name, out var gone)) Retire(gone); return; }
        var embedder = new OpenAiEmbedder(name, connection, delays);
        // Vectors are kept by what makes them: another model, address or length is another cache.
        var indexing = Cached(embedder, $"{connection.Type}:{connection.Url}:{connection.Model}:{connection.Dimensions}");
        var known = new Known(connection, embedder, indexing, new QueryEmbeddings(embedder));
        _known.AddOrUpdate(name, known, (_, old) => { Retire(old); return known; });
    }

    /// <summary>
    /// A replaced connection's client is let go once what it was asked has had time to end (a batch mid-request when the
    /// connection changed finishes on the client it started with, rather than failing on a disposed one).
    /// </summary>
    private static void Retire(Known old) =>
        _ = Task.Delay(TimeSpan.FromSeconds(EmbeddingConnection.MaxTimeoutSeconds)).ContinueWith(_ => Dispose(old), TaskScheduler.Default);

    /// <summary>Indexing's embedder of a connection (null: the built-in model), keeping what it makes when a cache is set.</summary>
    public ITextEmbedder For(string? name) =>
        name is null ? _builtIn ??= Cached(BuiltInModel.Shared, $"built-in:{BuiltInModel.Name}:{EmbeddingText.MaxCharacters}") : Find(name).Indexing;

    /// <summary>
    /// The embedder keeping its vectors in the cache of <paramref name="model"/> (one per model, shared by every connection naming
    /// it); the embedder alone when no cache is set or its files can't be opened (the cache only saves work).
    /// </summary>
    private ITextEmbedder Cached(ITextEmbedder embedder, string model) =>
        CacheById(Caching.EmbeddingCache.IdOf(model)) is { } kept ? new Caching.CachedEmbedder(embedder, kept, () => _share?.Restored ?? Task.CompletedTask) : embedder;

    /// <summary>The cache of a model by its id (<see cref="Caching.EmbeddingCache.IdOf"/>), opened on first use; null when none is set or it can't be opened.</summary>
    public Caching.EmbeddingCache? CacheById(string id) =>
        cache is { Bytes: > 0 } c ? _caches.GetOrAdd(id, i => new(() => Open(c.Folder, i, c.Bytes))).Value : null;

    private Caching.EmbeddingCache? Open(string folder, string id, long bytes)
    {
        try
        {
            var opened = Caching.EmbeddingCache.Open(folder, id, bytes);
            opened.Kept = (key, vector) => _share?.Publish(id, key, vector);
            return opened;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException) { return null; }
    }

    private static void Dispose(Known known) => known.Embedder.Dispose();

    /// <summary>The query-text cache of a connection (null: the built-in model's).</summary>
    public QueryEmbeddings QueriesFor(string? name) => name is null ? QueryEmbeddings.BuiltIn : Find(name).Queries;

    private Known Find(string name) => _known.TryGetValue(name, out var known) ? known
        : throw new EmbeddingRefusedException($"there is no embedding connection '{name}' (PUT /embeddings/connections/{name} makes one)");

    public void Dispose()
    {
        foreach (var known in _known.Values) Dispose(known);
        _known.Clear();
        foreach (var kept in _caches.Values.Where(k => k.IsValueCreated)) kept.Value?.Dispose();
        _caches.Clear();
    }
}
