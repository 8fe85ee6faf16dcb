using Magpie.Embeddings.Caching;

namespace Magpie.Tests.Embeddings;

/// <summary>The vectors indexing made, kept on disk by text: found again after a reopen, a torn tail cut off, the budget kept.</summary>
public sealed class EmbeddingCacheTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("magpie-embedding-cache-").FullName;

    public void Dispose() => Directory.Delete(_root, recursive: true);

    private static float[] VectorOf(int seed, int dimensions = 384) => [.. Enumerable.Range(0, dimensions).Select(i => (float)Math.Sin(seed * 31 + i))];

    [Fact]
    public void A_vector_kept_is_found_after_a_reopen_and_a_torn_tail_loses_only_itself()
    {
        var texts = Enumerable.Range(0, 50).Select(i => $"text number {i}").ToList();
        using (var cache = EmbeddingCache.Open(_root, EmbeddingCache.IdOf("model-a"), 1L << 30))
        {
            Assert.All(cache.Find(texts), Assert.Null);
            cache.Keep(texts, [.. texts.Select((_, i) => VectorOf(i))]);
        }
        // A kill -9 in the middle of an append: half a record at the end of the file.
        var file = Directory.GetFiles(_root, "newer.vectors", SearchOption.AllDirectories).Single();
        var length = new FileInfo(file).Length;
        using (var f = File.OpenWrite(file)) { f.Position = length; f.Write(new byte[700]); }
        using (var cache = EmbeddingCache.Open(_root, EmbeddingCache.IdOf("model-a"), 1L << 30))
        {
            var found = cache.Find([.. texts, "never kept"]);
            for (var i = 0; i < texts.Count; i++) Assert.Equal(VectorOf(i), found[i]);
            Assert.Null(found[^1]);
            Assert.Equal(length, new FileInfo(file).Length);   // the torn tail was cut off
            // Another model is another cache.
            using var other = EmbeddingCache.Open(_root, EmbeddingCache.IdOf("model-b"), 1L << 30);
            Assert.All(other.Find(texts), Assert.Null);
        }
        // A record whose bytes changed fails its checksum: it and what follows are dropped, what precedes stays.
        var bytes = File.ReadAllBytes(file);
        bytes[(int)(length / 2)] ^= 0xFF;
        File.WriteAllBytes(file, bytes);
        using (var cache = EmbeddingCache.Open(_root, EmbeddingCache.IdOf("model-a"), 1L << 30))
        {
            var found = cache.Find(texts);
            Assert.Equal(VectorOf(0), found[0]);
            Assert.Contains(found, f => f is null);
            Assert.All(found.TakeWhile(f => f is not null).Select((f, i) => (f, i)), x => Assert.Equal(VectorOf(x.i), x.f));
        }
    }

    [Fact]
    public void The_budget_holds_and_what_is_still_asked_for_stays()
    {
        // 1,560 bytes a record: a budget of 100 records keeps 50 per generation.
        const long budget = 100 * (24 + 384 * 4 + 4);
        using var cache = EmbeddingCache.Open(_root, EmbeddingCache.IdOf("model-a"), budget);
        cache.Keep(["kept warm"], [VectorOf(-1)]);
        for (var i = 0; i < 400; i++)
        {
            cache.Keep([$"text {i}"], [VectorOf(i)]);
            Assert.NotNull(cache.Find(["kept warm"])[0]);   // asked for all along: copied forward at each turn
        }
        var size = Directory.GetFiles(_root, "*.vectors", SearchOption.AllDirectories).Sum(f => new FileInfo(f).Length);
        Assert.True(size <= budget + 1560, $"{size} bytes kept for a budget of {budget}");
        Assert.Null(cache.Find(["text 0"])[0]);
        Assert.Equal(VectorOf(399), cache.Find(["text 399"])[0]);
    }

    [Fact]
    public void What_a_cache_keeps_is_passed_on_once_and_what_another_made_is_taken_without_passing_it_on()
    {
        using var cache = EmbeddingCache.Open(_root, EmbeddingCache.IdOf("model-a"), 1L << 30);
        var passed = new List<UInt128>();
        cache.Kept = (key, _) => passed.Add(key);
        cache.Keep(["a", "b"], [VectorOf(1), VectorOf(2)]);
        cache.Keep(["a", "c"], [VectorOf(1), VectorOf(3)]);
        Assert.Equal([EmbeddingCache.KeyOf("a"), EmbeddingCache.KeyOf("b"), EmbeddingCache.KeyOf("c")], passed);
        // Another process's vector: kept and found by its text, not passed on again; one held already is left as it is.
        Assert.True(cache.Absorb(EmbeddingCache.KeyOf("d"), VectorOf(4)));
        Assert.False(cache.Absorb(EmbeddingCache.KeyOf("a"), VectorOf(99)));
        Assert.Equal(3, passed.Count);
        Assert.Equal(VectorOf(4), cache.Find(["d"])[0]);
        Assert.Equal(VectorOf(1), cache.Find(["a"])[0]);
        Assert.Throws<ArgumentException>(() => EmbeddingCache.Open(_root, "../elsewhere", 1L << 30));
    }
}
