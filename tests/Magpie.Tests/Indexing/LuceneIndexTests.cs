using System.Globalization;
using System.Text.RegularExpressions;
using System.Xml.Linq;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Lucene;
using Microsoft.Extensions.Logging.Abstractions;
using Magpie.Contracts.Search;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Producers;

namespace Magpie.Tests.Indexing;

/// <summary>The Stack Exchange sample's posts in a real Lucene.Net index, and what LINQ over the same XML says each query must find.</summary>
public sealed class PostsIndexFixture : IAsyncLifetime
{
    public string Dir { get; } = Directory.CreateTempSubdirectory("magpie-lucene-").FullName;
    public LuceneEngine Host { get; } = new(NullLogger.Instance);
    public IIndexPersistence Index { get; private set; } = null!;
    public List<Post> Posts { get; } = new StackExchangeXml(RepoPaths.StackExchangeSample).Posts.Select(Post.From).ToList();

    public sealed record Post(string Id, string Type, string? Title, string[] Tags, long Score, DateTime Created, long? Views)
    {
        public double? Popularity => Views / 100.0;

        public static Post From(XElement row) => new(
            "posts/" + (string)row.Attribute("Id")!, (string)row.Attribute("PostTypeId")!, (string?)row.Attribute("Title"),
            Regex.Matches((string?)row.Attribute("Tags") ?? "", "<([^>]+)>").Select(m => m.Groups[1].Value.ToLowerInvariant()).ToArray(),
            (long)row.Attribute("Score")!, DateTime.Parse((string)row.Attribute("CreationDate")!, CultureInfo.InvariantCulture), (long?)row.Attribute("ViewCount"));

        public IndexedDocument ToIndexed()
        {
            var fields = new List<IndexField>
            {
                new KeywordField("Type", Type), new LongField("Score", Score, Stored: true), new LongField("Created", Created.Ticks),
            };
            if (Title is not null) { fields.Add(new TextField("Title", Title)); fields.Add(new StoredField("TitleText", Title)); }
            fields.AddRange(Tags.Select(t => new KeywordField("Tags", t, Stored: true)));
            if (Views is { } v) { fields.Add(new LongField("Views", v)); fields.Add(new DoubleField("Popularity", v / 100.0)); }
            return new IndexedDocument(Id, [new IndexEntry(fields)]);
        }
    }

    public async Task InitializeAsync()
    {
        Index = Host.Open(Dir);
        foreach (var chunk in Posts.Chunk(500)) await Index.WriteAsync([], chunk.Select(p => p.ToIndexed()).ToList());
        await Index.CommitAsync(new Dictionary<string, string> { ["position"] = "1657" });
        await Index.RefreshAsync();
    }

    public async Task DisposeAsync()
    {
        Index.Close();
        Host.Dispose();
        try { Directory.Delete(Dir, recursive: true); } catch (IOException) { }
    }
}

[Trait("Category", "Fast")]
public sealed class LuceneIndexTests(PostsIndexFixture fx) : IClassFixture<PostsIndexFixture>
{
    private List<PostsIndexFixture.Post> Posts => fx.Posts;

    private async Task<List<string>> Ids(SearchQuery query) =>
        (await fx.Index.SearchAsync(new SearchRequest(query, [], PageSize: 10_000))).Hits.Select(h => h.Id).Order(StringComparer.Ordinal).ToList();

    private static List<string> Expected(IEnumerable<PostsIndexFixture.Post> posts) => posts.Select(p => p.Id).Order(StringComparer.Ordinal).ToList();

    /// <summary>
    /// Tokens as StandardAnalyzer (Unicode word breaks, UAX #29) makes them for these English titles: runs of
    /// letters and digits, kept together across an inner apostrophe, colon or period ("tag:crimea" is one
    /// token), lower-cased.
    /// </summary>
    private static IEnumerable<string> Tokens(string? text) =>
        Regex.Matches(text ?? "", @"[\p{L}\p{N}_]+(?:[':.][\p{L}\p{N}_]+)*").Select(m => m.Value.ToLowerInvariant());

    [Fact]
    public async Task Every_query_kind_finds_exactly_what_the_XML_says()
    {
        Assert.Equal(Expected(Posts.Where(p => p.Type == "1")), await Ids(new TermQuery("Type", "1")));
        Assert.Equal(Expected(Posts.Where(p => p.Tags.Contains("discussion"))), await Ids(new TermQuery("Tags", "discussion")));
        Assert.Equal(Expected(Posts.Where(p => p.Score is >= 5 and <= 10)), await Ids(new LongRangeQuery("Score", 5, 10)));
        Assert.Equal(Expected(Posts.Where(p => p.Score > 10)), await Ids(new LongRangeQuery("Score", 11, long.MaxValue)));
        var y2012 = new DateTime(2012, 1, 1);
        Assert.Equal(Expected(Posts.Where(p => p.Created >= y2012 && p.Created < y2012.AddYears(1))),
            await Ids(new LongRangeQuery("Created", y2012.Ticks, y2012.AddYears(1).Ticks - 1)));
        Assert.Equal(Expected(Posts.Where(p => p.Popularity >= 2.5)), await Ids(new DoubleRangeQuery("Popularity", 2.5, double.PositiveInfinity)));
        Assert.Equal(Expected(Posts.Where(p => p.Tags.Any(t => t.StartsWith("feature", StringComparison.Ordinal)))), await Ids(new PrefixQuery("Tags", "feature")));
        Assert.Equal(Expected(Posts.Where(p => p.Views is not null)), await Ids(new ExistsQuery("Views")));
        Assert.Equal(Expected(Posts.Where(p => Tokens(p.Title).Contains("sources"))), await Ids(new FullTextQuery("Title", "Sources")));
        Assert.Equal(Expected(Posts.Where(p => Tokens(p.Title).Any(t => t is "sources" or "tag"))), await Ids(new FullTextQuery("Title", "sources TAG")));
        Assert.Equal(Expected(Posts.Where(p => p.Tags.Intersect(["bug", "feature-request"]).Any())), await Ids(new TermsQuery("Tags", ["bug", "feature-request"])));
        Assert.Equal(Expected(Posts.Where(p => p.Type == "1" && p.Tags.Contains("discussion") && !(p.Score < 0))),
            await Ids(new BoolQuery([new TermQuery("Type", "1"), new TermQuery("Tags", "discussion")], [], [new LongRangeQuery("Score", long.MinValue, -1)])));
        Assert.Equal(Expected(Posts.Where(p => p.Tags.Contains("bug") || p.Score >= 20)),
            await Ids(BoolQuery.Or(new TermQuery("Tags", "bug"), new LongRangeQuery("Score", 20, long.MaxValue))));
        Assert.Equal(Expected(Posts.Where(p => p.Type != "1")), await Ids(BoolQuery.Not(new TermQuery("Type", "1"))));
        // "a and not x" (unscored, the negation joins its parent), a negation alone under "and", and beside alternatives.
        Assert.Equal(Expected(Posts.Where(p => p.Type == "1" && !p.Tags.Contains("discussion"))),
            await Ids(BoolQuery.And(new TermQuery("Type", "1"), BoolQuery.Not(new TermQuery("Tags", "discussion")))));
        Assert.Equal(Expected(Posts.Where(p => !p.Tags.Contains("discussion"))), await Ids(BoolQuery.And(BoolQuery.Not(new TermQuery("Tags", "discussion")))));
        Assert.Equal(Expected(Posts.Where(p => !(p.Score < 0) && (p.Tags.Contains("bug") || p.Type == "1"))),
            await Ids(new BoolQuery([BoolQuery.Not(new LongRangeQuery("Score", long.MinValue, -1))], [new TermQuery("Tags", "bug"), new TermQuery("Type", "1")], [])));
        Assert.True(Posts.Count(p => p.Tags.Contains("discussion")) > 10, "the sample should exercise these queries");
    }

    [Fact]
    public async Task Totals_are_exact_and_sorting_by_numbers_strings_and_score_follows_the_data()
    {
        var all = await fx.Index.SearchAsync(new SearchRequest(SearchQuery.All, [new SortField(SortKind.Long, "Score", Descending: true)], PageSize: 25));
        Assert.Equal(Posts.Count, all.TotalHits);
        Assert.Equal(Posts.OrderByDescending(p => p.Score).ThenBy(p => p.Id, StringComparer.Ordinal).Take(25).Select(p => p.Id), all.Hits.Select(h => h.Id));
        Assert.Equal(Posts.OrderByDescending(p => p.Score).First().Score, (long)all.Hits[0].Stored["Score"].Single());

        var byPopularity = await fx.Index.SearchAsync(new SearchRequest(new ExistsQuery("Popularity"), [new SortField(SortKind.Double, "Popularity")], PageSize: 10));
        Assert.Equal(Posts.Where(p => p.Views is not null).OrderBy(p => p.Popularity).ThenBy(p => p.Id, StringComparer.Ordinal).Take(10).Select(p => p.Id), byPopularity.Hits.Select(h => h.Id));

        var byTag = await fx.Index.SearchAsync(new SearchRequest(new ExistsQuery("Tags"), [new SortField(SortKind.String, "Tags", Descending: true)], PageSize: 5, StoredFields: ["Tags"]));
        Assert.Equal(Posts.SelectMany(p => p.Tags).Max(StringComparer.Ordinal), byTag.Hits[0].Stored["Tags"].Cast<string>().Max(StringComparer.Ordinal));

        var scored = await fx.Index.SearchAsync(new SearchRequest(new FullTextQuery("Title", "sources answers"), [SortField.Score], PageSize: 50));
        Assert.True(scored.Hits.Count > 1);
        Assert.True(scored.Hits.Zip(scored.Hits.Skip(1)).All(p => p.First.Score >= p.Second.Score));
        Assert.All(scored.Hits, h => Assert.True(h.Score > 0));
    }

    [Fact]
    public async Task Sorting_by_a_full_text_field_orders_by_its_lower_cased_start_ASCII_or_not()
    {
        var titled = Posts.Where(p => p.Title is not null).ToList();
        Assert.Contains(titled, p => !System.Text.Ascii.IsValid(p.Title!));   // the data has a title in curly quotes: the other path
        var byTitle = await fx.Index.SearchAsync(new SearchRequest(new ExistsQuery("Title"), [new SortField(SortKind.String, "Title")], PageSize: titled.Count));
        Assert.Equal(titled.OrderBy(p => p.Title![..Math.Min(p.Title!.Length, 256)].ToLowerInvariant(), StringComparer.Ordinal).ThenBy(p => p.Id, StringComparer.Ordinal).Select(p => p.Id),
            byTitle.Hits.Select(h => h.Id));
    }

    [Fact]
    public async Task Cursor_pages_and_offset_pages_walk_the_same_order_without_gaps_or_repeats()
    {
        var sort = new[] { new SortField(SortKind.Long, "Created") };
        var expected = Posts.OrderBy(p => p.Created.Ticks).ThenBy(p => p.Id, StringComparer.Ordinal).Select(p => p.Id).ToList();
        var byCursor = new List<string>();
        SearchCursor? after = null;
        while (true)
        {
            var page = await fx.Index.SearchAsync(new SearchRequest(SearchQuery.All, sort, PageSize: 100, After: after));
            if (page.Hits.Count == 0) break;
            byCursor.AddRange(page.Hits.Select(h => h.Id));
            after = SearchCursor.Parse(page.Hits[^1].Cursor.ToString());   // as a client would send it back
        }
        Assert.Equal(expected, byCursor);
        var byOffset = new List<string>();
        for (var skip = 0; skip < Posts.Count; skip += 300)
            byOffset.AddRange((await fx.Index.SearchAsync(new SearchRequest(SearchQuery.All, sort, PageSize: 300, Skip: skip))).Hits.Select(h => h.Id));
        Assert.Equal(expected, byOffset);

        var wrong = await Assert.ThrowsAsync<IndexEngineException>(() => fx.Index.SearchAsync(new SearchRequest(SearchQuery.All, [], PageSize: 1, After: after)));
        Assert.Contains("cursor", wrong.Message);
    }

    [Fact]
    public async Task Sorting_by_a_multi_valued_field_pages_by_cursor_across_segments_as_the_data_says()
    {
        // Many small segments (a refresh per 150 posts): each hit's ordinal comes from the in-memory column of its segment, and
        // the queue's bottom and the cursor are found again in every next segment by term (ColumnSort, TermSample).
        var dir = Directory.CreateTempSubdirectory("magpie-lucene-sort-").FullName;
        using var engine = new LuceneEngine(NullLogger.Instance);
        var index = engine.Open(dir);
        try
        {
            foreach (var chunk in Posts.Chunk(150))
            {
                await index.WriteAsync([], chunk.Select(p => p.ToIndexed()).ToList());
                await index.RefreshAsync();
            }
            foreach (var descending in new[] { false, true })
            {
                // Ascending by each post's smallest tag, posts without tags first; descending by the largest, those without last; then by id.
                var ordered = descending
                    ? Posts.OrderBy(p => p.Tags.Length == 0).ThenByDescending(p => p.Tags.Max(StringComparer.Ordinal), StringComparer.Ordinal)
                    : Posts.OrderBy(p => p.Tags.Length > 0).ThenBy(p => p.Tags.Min(StringComparer.Ordinal), StringComparer.Ordinal);
                var expected = ordered.ThenBy(p => p.Id, StringComparer.Ordinal).Select(p => p.Id).ToList();
                var walked = new List<string>();
                SearchCursor? after = null;
                while (true)
                {
                    var page = await index.SearchAsync(new SearchRequest(SearchQuery.All, [new SortField(SortKind.String, "Tags", descending)], PageSize: 37, After: after));
                    if (page.Hits.Count == 0) break;
                    walked.AddRange(page.Hits.Select(h => h.Id));
                    after = page.Hits[^1].Cursor;
                }
                Assert.Equal(expected, walked);
            }
            Assert.True((await index.StateAsync()).FacetCache.IndexEntries > 0, "the sort columns are kept in the column cache");
        }
        finally
        {
            index.Close();
            Directory.Delete(dir, recursive: true);
        }
    }

    [Fact]
    public void A_sampled_term_lookup_answers_as_a_binary_search_over_every_term_would()
    {
        var terms = Enumerable.Range(0, 1000).Select(i => $"posts/{i * 3:D6}").ToList();   // sorted, with gaps between them
        var values = new ListSortedSet(terms);
        var sample = FacetColumns.TermSample.Of(values);
        foreach (var probe in Enumerable.Range(-2, 3010).Select(i => $"posts/{i:D6}").Append("").Append("zzz"))
        {
            var exact = terms.BinarySearch(probe, StringComparer.Ordinal);
            Assert.Equal(exact, sample.LookupTerm(new global::Lucene.Net.Util.BytesRef(probe), values));
        }
    }

    /// <summary>Sorted terms as sorted-set doc values (no documents): what <see cref="FacetColumns.TermSample"/> reads.</summary>
    private sealed class ListSortedSet(List<string> terms) : global::Lucene.Net.Index.SortedSetDocValues
    {
        public override long NextOrd() => NO_MORE_ORDS;
        public override void SetDocument(int docID) { }
        public override void LookupOrd(long ord, global::Lucene.Net.Util.BytesRef result) => result.CopyChars(terms[(int)ord]);
        public override long ValueCount => terms.Count;
    }

    [Fact]
    public async Task Updates_replace_all_entries_of_a_document_deletes_remove_them_and_both_show_after_a_refresh()
    {
        using var host = new LuceneEngine(NullLogger.Instance);
        var dir = Directory.CreateTempSubdirectory("magpie-lucene-").FullName;
        var index = host.Open(dir);
        IndexedDocument Doc(string id, params string[] colors) => new(id, colors.Select(c => new IndexEntry([new KeywordField("Color", c)])).ToList());
        await index.WriteAsync([], [Doc("a", "red", "blue"), Doc("b", "red")]);
        Assert.Empty(await Red());                    // written, not yet refreshed
        await index.RefreshAsync();
        Assert.Equal(["a", "b"], await Red());
        Assert.Equal(3, (await index.StateAsync()).Entries);

        await index.WriteAsync(["b"], [Doc("a", "green")]);
        await index.RefreshAsync();
        Assert.Empty(await Red());
        Assert.Equal(1, (await index.StateAsync()).Entries);

        await index.DeleteAllAsync();
        Assert.Equal(0, (await index.StateAsync()).Entries);
        Directory.Delete(dir, recursive: true);

        async Task<List<string>> Red() => (await index.SearchAsync(new SearchRequest(new TermQuery("Color", "red"), [], 10))).Hits.Select(h => h.Id).Order().ToList();
    }

    [Fact]
    public async Task An_id_the_index_held_before_it_reopened_is_replaced_and_an_id_it_never_held_is_added_without_a_delete()
    {
        // Nothing tells the engine which ids are new (a Kafka feed can't): it knows them from its own filter, filled at open.
        var dir = Directory.CreateTempSubdirectory("magpie-lucene-known-").FullName;
        using var engine = new LuceneEngine(NullLogger.Instance);
        var index = engine.Open(dir);
        foreach (var chunk in Posts.Chunk(500)) await index.WriteAsync([], chunk.Select(p => p.ToIndexed()).ToList());
        await index.CommitAsync(new Dictionary<string, string> { ["position"] = "1" });
        Assert.False(((LuceneIndex)index).HasDeletions, "first versions leave no delete term");
        index.Close();

        var reopened = engine.Open(dir);
        try
        {
            await ((LuceneIndex)reopened).KnownIdsFill;   // the index's ids are read into its filter in the background
            Assert.Equal(new KnownIdsStats(reopened.Opened.KnownIds.Bytes, Filling: false, Full: false), (await reopened.StateAsync()).KnownIds);
            var fresh = Enumerable.Range(1, 100).Select(i => new IndexedDocument($"fresh/{i}", [new IndexEntry([new KeywordField("Type", "fresh")])])).ToList();
            await reopened.WriteAsync([], fresh);
            Assert.False(((LuceneIndex)reopened).HasDeletions, "ids the index never held leave no delete term");

            // Every post again, each with one new tag: replaced, not duplicated.
            await reopened.WriteAsync([], Posts.Select(p => p with { Tags = [.. p.Tags, "again"] }).Select(p => p.ToIndexed()).ToList());
            Assert.True(((LuceneIndex)reopened).HasDeletions);
            await reopened.RefreshAsync();
            Assert.Equal(Posts.Count + fresh.Count, (await reopened.StateAsync()).Entries);
            var again = await reopened.SearchAsync(new SearchRequest(new TermQuery("Tags", "again"), [], PageSize: 1));
            Assert.Equal(Posts.Count, again.TotalHits);
        }
        finally
        {
            reopened.Close();
            Directory.Delete(dir, recursive: true);
        }
    }

    [Fact]
    public async Task A_folder_the_Java_host_wrote_with_Lucene_8_is_recognised_emptied_and_written_anew()
    {
        // Real Lucene 8.7 files (three entries and a commit with Magpie's position), as the retired Java host left them.
        var dir = Directory.CreateTempSubdirectory("magpie-lucene8-").FullName;
        foreach (var file in Directory.GetFiles(Path.Combine(RepoPaths.Root, "tests", "Magpie.Tests", "Indexing", "Lucene8Index")))
            File.Copy(file, Path.Combine(dir, Path.GetFileName(file)));
        var log = new LinesLogger();
        using var engine = new LuceneEngine(log);
        var index = engine.Open(dir);
        Assert.Empty(index.Opened.CommitData);   // no position: the worker rebuilds from the beginning of the feed
        Assert.Equal(0, index.Opened.Entries);
        var line = Assert.Single(log.Lines);
        Assert.Contains(dir, line);
        Assert.Contains("not written by " + LuceneEngine.EngineName, line);
        Assert.Contains("segments format 10", line);
        Assert.DoesNotContain(Directory.GetFiles(dir), f => Path.GetFileName(f).StartsWith("_0."));   // Lucene 8's segment went

        await index.WriteAsync([], [new IndexedDocument("posts/1", [new IndexEntry([new KeywordField("Tags", "dotnet")])])]);
        await index.CommitAsync(new Dictionary<string, string> { ["position"] = "1" });
        index.Close();
        var reopened = engine.Open(dir);   // now an index of this engine: opened as it is, nothing logged
        Assert.Equal("1", reopened.Opened.CommitData["position"]);
        Assert.Single(log.Lines);
        reopened.Close();
        Directory.Delete(dir, recursive: true);
    }

    [Theory]
    [InlineData(Microsoft.Extensions.Logging.LogLevel.Trace, true)]
    [InlineData(Microsoft.Extensions.Logging.LogLevel.Debug, false)]
    public async Task Lucenes_own_account_of_a_refresh_is_in_the_engine_log_at_trace_level_only(Microsoft.Extensions.Logging.LogLevel level, bool logged)
    {
        var dir = Directory.CreateTempSubdirectory("magpie-infostream-").FullName;
        var log = new LinesLogger(level);
        using (var engine = new LuceneEngine(log))
        {
            var index = engine.Open(dir);
            await index.WriteAsync([], [new IndexedDocument("posts/1", [new IndexEntry([new KeywordField("Tags", "dotnet")])])]);
            await index.RefreshAsync();
            index.Close();
        }
        if (logged)
        {
            // The refresh's flush, named by the index folder and Lucene's component.
            Assert.Contains(log.Lines, l => l == $"lucene {Path.GetFileName(dir)} IW: flush at getReader");
            Assert.Contains(log.Lines, l => l.StartsWith($"lucene {Path.GetFileName(dir)} DWPT: flush postings as segment "));
        }
        else Assert.Empty(log.Lines);
        Directory.Delete(dir, recursive: true);
    }

    private sealed class LinesLogger(Microsoft.Extensions.Logging.LogLevel minimum = Microsoft.Extensions.Logging.LogLevel.Information) : Microsoft.Extensions.Logging.ILogger
    {
        public List<string> Lines { get; } = [];
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;
        public bool IsEnabled(Microsoft.Extensions.Logging.LogLevel level) => level >= minimum;
        public void Log<TState>(Microsoft.Extensions.Logging.LogLevel level, Microsoft.Extensions.Logging.EventId id, TState state, Exception? e, Func<TState, Exception?, string> format)
        {
            if (IsEnabled(level)) lock (Lines) Lines.Add(format(state, e));
        }
    }

    [Fact]
    public async Task Commit_data_survives_a_crash_and_uncommitted_writes_do_not()
    {
        var dir = Directory.CreateTempSubdirectory("magpie-lucene-").FullName;
        var crashed = Directory.CreateTempSubdirectory("magpie-lucene-crashed-").FullName;
        using var engine = new LuceneEngine(NullLogger.Instance);
        var index = engine.Open(dir);
        await index.WriteAsync([], [new IndexedDocument("x/1", [new IndexEntry([new KeywordField("K", "v")])])]);
        await index.CommitAsync(new Dictionary<string, string> { ["position"] = "42", ["etag"] = "7" });
        await index.WriteAsync([], [new IndexedDocument("x/2", [new IndexEntry([new KeywordField("K", "v")])])]);
        await index.RefreshAsync();   // searchable (flushed to a segment of its own), not committed
        // The disk as a kill -9 would leave it now: every file the writer has written, its lock included.
        foreach (var file in Directory.GetFiles(dir)) File.Copy(file, Path.Combine(crashed, Path.GetFileName(file)));
        index.Close();

        var reopened = engine.Open(crashed);
        Assert.Equal(new Dictionary<string, string> { ["position"] = "42", ["etag"] = "7" }, reopened.Opened.CommitData);
        Assert.Equal(1, reopened.Opened.Entries);
        reopened.Close();
        Directory.Delete(dir, recursive: true);
        Directory.Delete(crashed, recursive: true);
    }
}
