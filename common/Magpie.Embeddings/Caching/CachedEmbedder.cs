namespace Magpie.Embeddings.Caching;

/// <summary>An embedder whose vectors are kept (<see cref="EmbeddingCache"/>): a text embedded once is never sent to the model again.</summary>
public sealed class CachedEmbedder(ITextEmbedder inner, EmbeddingCache cache) : ITextEmbedder
{
    public string Model => inner.Model;

    public EmbeddingCache Cache => cache;

    public async Task<float[][]> EmbedAsync(IReadOnlyList<string> texts, CancellationToken ct, bool query = false)
    {
        var found = cache.Find(texts);
        var missing = Enumerable.Range(0, texts.Count).Where(i => found[i] is null).ToList();
        if (missing.Count > 0)
        {
            var asked = missing.Select(i => texts[i]).ToList();
            var made = await inner.EmbedAsync(asked, ct, query);
            cache.Keep(asked, made);
            for (var i = 0; i < missing.Count; i++) found[missing[i]] = made[i];
        }
        return found!;
    }
}
