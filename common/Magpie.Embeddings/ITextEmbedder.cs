namespace Magpie.Embeddings;

/// <summary>Turns texts into vectors of one model: the same text always gives the same vector.</summary>
public interface ITextEmbedder
{
    /// <summary>The model's name (vectors of different models are not comparable).</summary>
    string Model { get; }

    /// <summary>
    /// One vector per text, in order. Texts are cut to <see cref="EmbeddingText.MaxCharacters"/> first. <paramref name="query"/>:
    /// a query's text, which never waits behind indexing's batches.
    /// </summary>
    Task<float[][]> EmbedAsync(IReadOnlyList<string> texts, CancellationToken ct, bool query = false);
}

/// <summary>What an embedding is made of: the text as the model reads it.</summary>
public static class EmbeddingText
{
    /// <summary>
    /// Texts are cut to this many characters before the model sees them: the model reads its first 256 word pieces (about 1,000
    /// characters of English), so what lies further never changes the vector, and a 1 MB text costs its tokenizer no more than this.
    /// </summary>
    public const int MaxCharacters = 16_384;

    /// <summary>The text the model is given, or null when there is nothing to embed (empty or whitespace: no vector).</summary>
    public static string? Of(string? text)
    {
        if (string.IsNullOrWhiteSpace(text)) return null;
        return text.Length <= MaxCharacters ? text : text[..MaxCharacters];
    }
}
