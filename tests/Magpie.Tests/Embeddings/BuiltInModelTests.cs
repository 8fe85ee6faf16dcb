using System.Numerics.Tensors;
using Magpie.Embeddings;

namespace Magpie.Tests.Embeddings;

/// <summary>The built-in model against its published reference output, and its limits on what it is given.</summary>
public sealed class BuiltInModelTests
{
    private static float[][] Embed(params string[] texts) => BuiltInModel.Shared.EmbedAsync(texts, CancellationToken.None).GetAwaiter().GetResult();

    [Fact]
    public void The_models_similarities_are_the_ones_sentence_transformers_publishes_for_all_MiniLM_L6_v2()
    {
        // sbert.net's quick start, SentenceTransformer("all-MiniLM-L6-v2"): model.similarity(embeddings, embeddings) prints
        // [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]].
        var v = Embed("The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium.");
        Assert.All(v, x => Assert.Equal(384, x.Length));
        Assert.All(v, x => Assert.Equal(1, TensorPrimitives.Norm(x), 3));
        Assert.Equal(0.6660, TensorPrimitives.CosineSimilarity(v[0], v[1]), 0.0005);
        Assert.Equal(0.1046, TensorPrimitives.CosineSimilarity(v[0], v[2]), 0.0005);
        Assert.Equal(0.1411, TensorPrimitives.CosineSimilarity(v[1], v[2]), 0.0005);
    }

    [Fact]
    public void A_text_gets_the_same_vector_alone_or_in_a_batch_and_past_the_models_window_text_changes_nothing()
    {
        var texts = Enumerable.Range(0, 40).Select(i => $"question number {i} about tagging").ToArray();
        var batch = Embed(texts);
        var alone = Embed(texts[37]);
        Assert.True(TensorPrimitives.CosineSimilarity(batch[37], alone[0]) >= 0.9999f);

        var megabyte = string.Concat(Enumerable.Repeat("how do tags work on this site ", 35_000));
        var clock = System.Diagnostics.Stopwatch.StartNew();
        var big = Embed(megabyte, megabyte[..EmbeddingText.MaxCharacters]);
        Assert.True(TensorPrimitives.CosineSimilarity(big[0], big[1]) >= 0.9999f);
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(30), $"a 1 MB text took {clock.Elapsed}");
        Assert.Null(EmbeddingText.Of("  \n "));
    }
}
