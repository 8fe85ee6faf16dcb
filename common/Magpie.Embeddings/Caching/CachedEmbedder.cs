namespace Magpie.Embeddings.Caching;

/// <summary>An embedder whose vectors are kept (<see cref="EmbeddingCache"/>): a text embedded once is never sent to the model again.</summary>
/// <param name="restored">What to wait for before asking the model (the vectors other processes shared still arriving), if anything.</param>
public sealed class CachedEmbedder(ITextEmbedder inner, EmbeddingCache cache, Func<Task>? restored = null) : ITextEmbedder
{
    public string Model => inner.Model;

    public EmbeddingCache Cache => cache;

    public async Task<float[][]> EmbedAsync(IReadOnlyList<string> texts, CancellationToken ct, bool query = false)
    {
        var found = cache.Find(texts);
        if (found.Any(f => f is null) && restored?.Invoke() is { IsCompleted: false } arriving)
        {
            await arriving.WaitAsync(ct);
            found = cache.Find(texts);
        }
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
