using Magpie.Indexer.Lucene;

namespace Magpie.Tests.Indexing;

/// <summary>The filter that lets an index add an id it never held without a delete term: it must never say "no" to an id it was given.</summary>
public sealed class KnownIdsTests
{
    [Fact]
    public void Every_added_id_is_known_as_the_filter_grows_and_few_others_are()
    {
        var known = new KnownIds();
        var added = Enumerable.Range(0, 500_000).Select(i => $"posts/{i}").ToList();
        foreach (var id in added) known.Add(id);
        Assert.All(added, id => Assert.True(known.MayContain(id), id));
        var falsePositives = Enumerable.Range(0, 100_000).Count(i => known.MayContain($"users/{i}"));
        Assert.InRange(falsePositives, 0, 3_000);   // ~1 % per layer; several layers after growing from 65,536
        Assert.False(known.Full);
    }

    [Fact]
    public void Ids_added_from_several_threads_at_once_are_all_known()
    {
        var known = new KnownIds();
        Parallel.For(0, 4, t => { for (var i = 0; i < 200_000; i++) known.Add($"t{t}/{i}"); });
        for (var t = 0; t < 4; t++)
            for (var i = 0; i < 200_000; i++)
                Assert.True(known.MayContain($"t{t}/{i}"), $"t{t}/{i}");
    }

    [Fact]
    public void Past_its_memory_bound_the_filter_says_every_id_may_be_known()
    {
        var known = new KnownIds(maxBytes: 1 << 20);
        for (var i = 0; i < 2_000_000 && !known.Full; i++) known.Add($"posts/{i}");
        Assert.True(known.Full);
        Assert.InRange(known.Bytes, 1, 1 << 20);
        Assert.All(Enumerable.Range(0, 1000), i => Assert.True(known.MayContain($"never/{i}")));
    }
}
