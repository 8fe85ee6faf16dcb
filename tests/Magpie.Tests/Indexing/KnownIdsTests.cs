using Magpie.Indexer.Lucene;

namespace Magpie.Tests.Indexing;

/// <summary>
/// The filter that lets an index add an id it never held without a delete term: it must never call an id new, or say there is
/// nothing to delete, once it was given that id.
/// </summary>
public sealed class KnownIdsTests
{
    [Fact]
    public void Every_added_id_stays_known_as_the_filter_grows_and_few_others_seem_known()
    {
        var known = new KnownIds();
        var added = Enumerable.Range(0, 500_000).Select(i => $"posts/{i}").ToList();
        Assert.InRange(added.Count(known.Add), added.Count * 97 / 100, added.Count);   // new, but for the filter's false positives
        Assert.All(added, id => Assert.False(known.Add(id), id));
        Assert.All(added, id => Assert.True(known.MayHold(id), id));
        var falsePositives = Enumerable.Range(0, 100_000).Count(i => known.MayHold($"users/{i}"));
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
                Assert.True(known.MayHold($"t{t}/{i}"), $"t{t}/{i}");
    }

    [Fact]
    public void While_an_index_fills_it_no_id_is_new_and_any_may_be_held()
    {
        var known = new KnownIds(filling: true);
        Assert.False(known.Add("posts/1"));          // written while the index's own ids are still being read in
        Assert.True(known.MayHold("posts/2"));
        known.Add("posts/2");                        // one of the index's own
        known.Filled();
        Assert.False(known.Add("posts/1"));
        Assert.False(known.Add("posts/2"));
        Assert.True(known.Add("posts/3"));
        Assert.False(known.MayHold("posts/4"));
    }

    [Fact]
    public void Past_its_memory_bound_the_filter_says_every_id_may_be_held_and_none_is_new()
    {
        var known = new KnownIds(maxBytes: 1 << 20);
        for (var i = 0; i < 2_000_000 && !known.Full; i++) known.Add($"posts/{i}");
        Assert.True(known.Full);
        Assert.InRange(known.Bytes, 1, 1 << 20);
        Assert.All(Enumerable.Range(0, 1000), i => Assert.True(known.MayHold($"never/{i}")));
        Assert.All(Enumerable.Range(0, 1000), i => Assert.False(known.Add($"never/{i}")));
    }
}
