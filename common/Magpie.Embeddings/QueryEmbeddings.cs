using System.Collections.Concurrent;

namespace Magpie.Embeddings;

/// <summary>
/// Query texts' vectors, made once per distinct text: a user paging through results, or a dashboard re-running its query, asks for
/// the same text again. Bounded: past <see cref="Capacity"/> texts the cache starts over.
/// </summary>
public sealed class QueryEmbeddings(ITextEmbedder model)
{
    public const int Capacity = 10_000;

    private readonly ConcurrentDictionary<string, float[]> _vectors = new(StringComparer.Ordinal);

    public static QueryEmbeddings BuiltIn { get; } = new(BuiltInModel.Shared);

    /// <summary>The text's vector; null when the text is empty or whitespace (there is nothing to search for).</summary>
    public async Task<float[]?> VectorOfAsync(string text, CancellationToken ct)
    {
        if (EmbeddingText.Of(text) is not { } cut) return null;
        if (_vectors.TryGetValue(cut, out var known)) return known;
        var vector = (await model.EmbedAsync([cut], ct, query: true))[0];
        if (_vectors.Count >= Capacity) _vectors.Clear();
        _vectors[cut] = vector;
        return vector;
    }
}
