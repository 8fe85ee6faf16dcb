using Magpie.Contracts.Search;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Lucene;
using Microsoft.Extensions.Logging.Abstractions;

namespace Magpie.Tests.Indexing;

/// <summary>
/// The filter that lets an index add an id it never held without a delete term: it must never call an id new, or say there is
/// nothing to delete, once it was given that id.
/// </summary>
[Trait("Category", "Fast")]
public sealed class KnownIdsTests
{
    [Fact]
    public void Every_added_id_stays_known_as_the_filter_grows_and_few_others_seem_known()
    {
        var known = new KnownIdFilter();
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
        var known = new KnownIdFilter();
        Parallel.For(0, 4, t => { for (var i = 0; i < 200_000; i++) known.Add($"t{t}/{i}"); });
        for (var t = 0; t < 4; t++)
            for (var i = 0; i < 200_000; i++)
                Assert.True(known.MayHold($"t{t}/{i}"), $"t{t}/{i}");
    }

    [Fact]
    public void While_an_index_fills_it_no_id_is_new_and_any_may_be_held()
    {
        var known = new KnownIdFilter(filling: true);
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
        var known = new KnownIdFilter(maxBytes: 1 << 20);
        for (var i = 0; i < 2_000_000 && !known.Full; i++) known.Add($"posts/{i}");
        Assert.True(known.Full);
        Assert.Equal(0, known.Bytes);   // its layers are dropped: they could no longer answer "new"
        Assert.All(Enumerable.Range(0, 1000), i => Assert.True(known.MayHold($"never/{i}")));
        Assert.All(Enumerable.Range(0, 1000), i => Assert.False(known.Add($"never/{i}")));
    }

    [Fact]
    public void Filters_share_one_budget_one_that_does_not_fit_says_maybe_and_a_released_one_gives_its_memory_back()
    {
        var budget = new KnownIdsBudget(200 << 10);   // two first layers (80 KiB each), not three
        var (a, b, c) = (new KnownIdFilter(budget: budget), new KnownIdFilter(budget: budget), new KnownIdFilter(budget: budget));
        Assert.Equal((false, false, true), (a.Full, b.Full, c.Full));
        Assert.Equal(a.Bytes + b.Bytes, budget.Used);
        Assert.True(c.MayHold("posts/1"));
        Assert.False(c.Add("posts/1"));

        // a's second layer (160 KiB) does not fit beside b's: it drops its own layers and gives their memory back.
        var added = Enumerable.Range(0, 70_000).Select(i => $"a/{i}").ToList();
        foreach (var id in added) a.Add(id);
        Assert.True(a.Full);
        Assert.All(added, id => Assert.True(a.MayHold(id), id));
        Assert.Equal(b.Bytes, budget.Used);

        b.Release();
        Assert.Equal(0, budget.Used);
        Assert.True(b.MayHold("never/1"));
        var d = new KnownIdFilter(budget: budget);
        Assert.True(d.Add("posts/1"));
        Assert.False(d.MayHold("posts/2"));
    }

    [Fact]
    public async Task An_index_whose_filter_does_not_fit_the_engines_budget_writes_updates_and_a_closed_index_gives_its_filter_back()
    {
        var dirs = new[] { Directory.CreateTempSubdirectory("magpie-known-a-").FullName, Directory.CreateTempSubdirectory("magpie-known-b-").FullName };
        using var engine = new LuceneEngine(NullLogger.Instance, knownIdsBytes: 100 << 10);   // one index's first layer
        var (first, second) = (engine.Open(dirs[0]), engine.Open(dirs[1]));
        try
        {
            Assert.False((await first.StateAsync()).KnownIds.Full);
            var stats = (await second.StateAsync()).KnownIds;
            Assert.Equal((true, 0L), (stats.Full, stats.Bytes));

            // Without a filter every write is an update: a document written twice is one entry, with its second version.
            IndexedDocument Post(string tag) => new("posts/1", [new IndexEntry([new KeywordField("Tags", tag)])]);
            await second.WriteAsync([], [Post("first")]);
            await second.WriteAsync([], [Post("second")]);
            await second.RefreshAsync();
            Assert.Equal(1, (await second.StateAsync()).Entries);
            Assert.Equal(1, (await second.SearchAsync(new SearchRequest(new TermQuery("Tags", "second"), [], 10))).TotalHits);

            Assert.Equal((await first.StateAsync()).KnownIds.Bytes, engine.KnownIdsBudget.Used);
            first.Close();
            Assert.Equal(0, engine.KnownIdsBudget.Used);
        }
        finally
        {
            first.Close();
            second.Close();
            foreach (var dir in dirs) Directory.Delete(dir, recursive: true);
        }
    }
}
