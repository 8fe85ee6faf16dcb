using Magpie.Indexer.Engine;
using Magpie.Indexer.Lucene;
using Microsoft.Extensions.Logging.Abstractions;
using Magpie.Contracts.Search;

namespace Magpie.Tests.Indexing;

/// <summary>
/// Lucene.Net facet counting (FacetCounter/FacetColumns) through <see cref="IIndexPersistence.FacetsAsync"/>: values of
/// single- and multi-valued string and number fields, ranges, aggregations, over several segments with deleted entries,
/// for a match-all and a filtered query; and the column cache staying within a budget it has to evict to keep.
/// </summary>
[Trait("Category", "Fast")]
public sealed class FacetCountingTests : IAsyncLifetime
{
    private readonly string _dir = Directory.CreateTempSubdirectory("magpie-facets-").FullName;
    private LuceneEngine _host = null!;

    private sealed record Entry(int N)
    {
        public string Id => $"e/{N}";
        public string Kind => $"k{N % 7}";
        public string[] Tags => N % 3 == 0 ? ["even-third", $"t{N % 5}"] : [$"t{N % 5}"];
        public double Value => N % 11;

        public IndexedDocument ToIndexed()
        {
            List<IndexField> fields = [new KeywordField("Kind@cs", Kind), new DoubleField("Value@num", Value), new KeywordField("Unique@cs", $"u{N}")];
            fields.AddRange(Tags.Select(t => new KeywordField("Tags@cs", t)));
            if (N % 4 == 0) fields.Add(new DoubleField("Kind@num", N % 2));   // some entries hold numbers under the same facet field
            return new IndexedDocument(Id, [new IndexEntry(fields)]);
        }
    }

    public Task InitializeAsync()
    {
        _host = new LuceneEngine(NullLogger.Instance, facetCacheBytes: 1L << 20);
        return Task.CompletedTask;
    }

    public async Task DisposeAsync()
    {
        _host.Dispose();
        try { Directory.Delete(_dir, recursive: true); } catch (IOException) { }
    }

    [Fact]
    public async Task Counts_over_segments_leave_out_deleted_entries_match_the_model_and_the_cache_stays_within_its_budget()
    {
        var index = _host.Open(_dir);
        var entries = Enumerable.Range(0, 60_000).Select(n => new Entry(n)).ToList();
        foreach (var segment in entries.Chunk(20_000))   // three segments (a refresh after each)
        {
            await index.WriteAsync([], segment.Select(e => e.ToIndexed()).ToList());
            await index.RefreshAsync();
        }
        var deleted = entries.Where(e => e.N % 13 == 0).ToList();
        await index.WriteAsync(deleted.Select(e => e.Id).ToList(), []);
        await index.RefreshAsync();
        var live = entries.Except(deleted).ToList();

        IReadOnlyList<FacetSpec> specs =
        [
            new TermFacetSpec(["Kind@cs"], ["Kind@num"], ["Value@num"]),
            new TermFacetSpec(["Tags@cs"], [], []),
            new RangeFacetSpec([new DoubleRangeQuery("Value@num", 0, 4.5), new DoubleRangeQuery("Value@num", 5, double.PositiveInfinity)], ["Value@num"]),
            new TermFacetSpec(["Unique@cs"], [], []),
            new RangeFacetSpec([new DoubleRangeQuery("Value@num", 0, 4.5), new DoubleRangeQuery("Value@num", 3, 7)], []),   // counts only
        ];
        await AssertCountsAsync(index, SearchQuery.All, specs, live);
        await AssertCountsAsync(index, new TermQuery("Kind@cs", "k3"), specs, live.Where(e => e.Kind == "k3").ToList());

        // Four string columns (one of 60,000 distinct values) and two number columns per segment are more than the
        // 1 MB budget: the oldest go, the host stays within it, and counting again (rebuilding what went) gives the same.
        var cache = (await index.StateAsync()).FacetCache;
        Assert.Equal(1L << 20, cache.BudgetBytes);
        Assert.InRange(cache.TotalBytes, 1, cache.BudgetBytes);
        Assert.True(cache.Evictions > 0, $"no evictions: {cache}");
        await AssertCountsAsync(index, SearchQuery.All, specs, live);
        Assert.True((await index.StateAsync()).FacetCache.TotalBytes <= cache.BudgetBytes);
    }

    private static async Task AssertCountsAsync(IIndexPersistence index, SearchQuery query, IReadOnlyList<FacetSpec> specs, List<Entry> model)
    {
        var counts = await index.FacetsAsync(query, specs);
        Assert.Equal(model.Count, counts.TotalHits);

        // Kind: strings, plus the numbers some entries hold under Kind@num; Value aggregated per kind.
        var kinds = counts.Facets[0].Where(b => b.Text is not null).ToDictionary(b => b.Text!);
        Assert.Equal(model.GroupBy(e => e.Kind).OrderBy(g => g.Key).Select(g => (g.Key, (long)g.Count(), g.Sum(e => e.Value), g.Min(e => e.Value), g.Max(e => e.Value))),
            kinds.OrderBy(k => k.Key).Select(k => (k.Key, k.Value.Count, k.Value.Fields[0].Sum, k.Value.Fields[0].Min, k.Value.Fields[0].Max)));
        var numbers = counts.Facets[0].Where(b => b.Number is not null).ToDictionary(b => b.Number!.Value, b => b.Count);
        Assert.Equal(model.Where(e => e.N % 4 == 0).GroupBy(e => (double)(e.N % 2)).OrderBy(g => g.Key).Select(g => (g.Key, (long)g.Count())),
            numbers.OrderBy(n => n.Key).Select(n => (n.Key, n.Value)));

        // Tags: multi-valued, each entry counted once per value.
        Assert.Equal(model.SelectMany(e => e.Tags).GroupBy(t => t).OrderBy(g => g.Key, StringComparer.Ordinal).Select(g => (g.Key, (long)g.Count())),
            counts.Facets[1].OrderBy(b => b.Text, StringComparer.Ordinal).Select(b => (b.Text!, b.Count)));

        // Ranges, in the order asked, with the values' totals.
        var low = model.Where(e => e.Value <= 4.5).ToList();
        var high = model.Where(e => e.Value >= 5).ToList();
        Assert.Equal([(0, (long)low.Count, low.Sum(e => e.Value)), (1, (long)high.Count, high.Sum(e => e.Value))],
            counts.Facets[2].Select(b => (b.Range, b.Count, b.Fields[0].Sum)));

        Assert.Equal(model.Count, counts.Facets[3].Count);
        Assert.All(counts.Facets[3], b => Assert.Equal(1, b.Count));

        // Overlapping ranges without aggregates: an entry in both counts in both.
        Assert.Equal([(0, (long)low.Count), (1, (long)model.Count(e => e.Value is >= 3 and <= 7))],
            counts.Facets[4].Select(b => (b.Range, b.Count)));
    }
}
