using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Lucene;
using Microsoft.Extensions.Logging.Abstractions;
using Magpie.Contracts.Search;
using Magpie.Indexer.Maps;
using Magpie.Query.Rql;
using Magpie.Scripting;
using Magpie.Tests.Indexing;

namespace Magpie.Tests.Queries;

/// <summary>The Stack Exchange posts mapped by a JS index into real Lucene, queried in RQL; each answer computed from the XML.</summary>
public sealed class RqlPostsFixture : IAsyncLifetime
{
    public static readonly IndexDefinition Definition = new()
    {
        Maps = ["map('Posts', p => ({ Title: p.Title, Tags: p.Tags, Score: p.Score, Created: p.Created, Type: p.Type, Views: p.Views }))"],
        Fields = new() { ["Title"] = new() { Indexing = IndexFieldOptions.Search, Store = true }, ["Score"] = new() { Store = true } },
    };

    private readonly string _dir = Directory.CreateTempSubdirectory("magpie-rql-").FullName;
    public List<PostsIndexFixture.Post> Posts { get; } = new StackExchangeXmlPosts().Posts;
    public LuceneEngine Host { get; } = new(NullLogger.Instance);
    public IIndexPersistence Index { get; private set; } = null!;

    // Answers have no ViewCount: the property is absent from their documents, as in the dump.
    private static readonly JsonSerializerOptions OmitNulls = new() { DefaultIgnoreCondition = System.Text.Json.Serialization.JsonIgnoreCondition.WhenWritingNull };

    public async Task InitializeAsync()
    {
        Index = Host.Open(_dir);
        var maps = MapScript.Compile(Definition.Maps, ScriptLimits.Default);
        var docs = Posts.Select(p => new IndexedDocument(p.Id, maps.Run(new ChangeEvent(p.Id, "posts", 1, ChangeOp.Put, DateTimeOffset.UtcNow,
            JsonSerializer.SerializeToElement(new { p.Title, p.Tags, p.Score, Created = p.Created.ToString("yyyy-MM-ddTHH:mm:ss.fff"), p.Type, p.Views }, OmitNulls)))
            .Select(e => EntryMapping.From(e, Definition)).ToList())).ToList();
        await Index.WriteAsync([], docs);
        await Index.RefreshAsync();
    }

    public async Task DisposeAsync()
    {
        Index.Close();
        Host.Dispose();
        Directory.Delete(_dir, recursive: true);
    }
}

[Trait("Category", "Fast")]
public sealed class RqlQueryTests(RqlPostsFixture fx) : IClassFixture<RqlPostsFixture>
{
    private List<PostsIndexFixture.Post> Posts => fx.Posts;

    private async Task<SearchPage> Run(string rql, object? parameters = null, int pageSize = 5000)
    {
        var query = RqlParser.Parse(rql);
        var plan = await QueryRunner.PlanAsync([fx.Index], RqlPostsFixture.Definition, query,
            parameters is null ? null : JsonSerializer.SerializeToElement(parameters).EnumerateObject().ToDictionary(p => p.Name, p => p.Value.Clone()));
        return await plan.PageAsync(fx.Index, query.Limit ?? pageSize, query.Offset ?? 0, null);
    }

    private async Task<List<string>> Ids(string where, object? parameters = null) =>
        (await Run("from index 'Posts' where " + where, parameters)).Hits.Select(h => h.Id).Order(StringComparer.Ordinal).ToList();

    private static List<string> Expected(IEnumerable<PostsIndexFixture.Post> posts) => posts.Select(p => p.Id).Order(StringComparer.Ordinal).ToList();

    private static readonly DateTime Y2012 = new(2012, 1, 1);

    [Fact]
    public async Task Every_operator_finds_what_the_XML_says()
    {
        Assert.Equal(Expected(Posts.Where(p => p.Tags.Contains("discussion"))), await Ids("Tags = 'DISCUSSION'"));
        Assert.Equal(Expected(Posts.Where(p => p.Tags.Contains("discussion"))), await Ids("exact(Tags = 'discussion')"));
        Assert.Empty(await Ids("exact(Tags = 'Discussion')"));
        Assert.Equal(Expected(Posts.Where(p => p.Score > 10)), await Ids("Score > 10"));
        Assert.Equal(Expected(Posts.Where(p => p.Score >= 10)), await Ids("Score >= 10"));
        Assert.Equal(Expected(Posts.Where(p => p.Score < 0)), await Ids("Score < 0"));
        Assert.Equal(Expected(Posts.Where(p => p.Score <= 0)), await Ids("Score <= 0"));
        Assert.Equal(Expected(Posts.Where(p => p.Score != 0)), await Ids("Score != 0"));
        Assert.Equal(Expected(Posts.Where(p => p.Score is >= 5 and <= 10)), await Ids("Score between 5 and 10"));
        Assert.Equal(Expected(Posts.Where(p => p.Score is 1 or 2 or 3)), await Ids("Score in (1, 2, 3)"));
        Assert.Equal(Expected(Posts.Where(p => p.Tags.Intersect(["bug", "status-completed"]).Any())), await Ids("Tags in ('bug', 'Status-Completed')"));
        Assert.Equal(Expected(Posts.Where(p => p.Created >= Y2012 && p.Created < Y2012.AddYears(1))), await Ids("Created >= '2012-01-01' and Created < '2013-01-01'"));
        Assert.Equal(Expected(Posts.Where(p => p.Tags.Any(t => t.StartsWith("feature", StringComparison.Ordinal)))), await Ids("startsWith(Tags, 'Feature')"));
        Assert.Equal(Expected(Posts.Where(p => p.Views is not null)), await Ids("exists(Views)"));
        Assert.Equal(Expected(Posts.Where(p => p.Title is not null && p.Title.Contains("sources", StringComparison.OrdinalIgnoreCase)
            && System.Text.RegularExpressions.Regex.IsMatch(p.Title, @"\bsources\b", System.Text.RegularExpressions.RegexOptions.IgnoreCase))), await Ids("search(Title, 'sources')"));
        Assert.Equal(Expected(Posts.Where(p => !(p.Type == "1") || p.Score >= 20)), await Ids("not (Type = '1') or Score >= 20"));
        Assert.Equal(Expected(Posts.Where(p => p.Type == "1" && (p.Tags.Contains("bug") || p.Tags.Contains("discussion")) && !(p.Score < 0))),
            await Ids("Type = '1' and (Tags = 'bug' or Tags = 'discussion') and not Score < 0"));
        Assert.Equal(Expected(Posts.Where(p => p.Score >= 10 && p.Tags.Contains("discussion"))), await Ids("Score >= $min and Tags = $tag", new { min = 10, tag = "discussion" }));
        Assert.Contains("$missing", (await Assert.ThrowsAsync<RqlException>(() => Ids("Score = $missing"))).Message);
    }

    [Fact]
    public async Task A_string_compared_with_a_number_field_is_refused_at_the_literal()
    {
        const string rql = "from index 'Posts' where Type = '1' and Score > 'abc'";
        var e = await Assert.ThrowsAsync<RqlException>(() => Run(rql));
        Assert.Contains("'Score' holds numbers", e.Message);
        Assert.Equal((1, rql.IndexOf("'abc'", StringComparison.Ordinal) + 1), (e.Line, e.Column));
        const string between = "from index 'Posts' where Score between 1 and 'x'";
        Assert.Equal(between.IndexOf("'x'", StringComparison.Ordinal) + 1, (await Assert.ThrowsAsync<RqlException>(() => Run(between))).Column);
    }

    [Fact]
    public async Task A_long_chain_of_or_is_planned_flat_and_answers_as_in_does()
    {
        // 1,024 equalities (the condition limit): one boolean query of 1,024 clauses, not a 1,023-deep nest of them.
        var scores = Enumerable.Range(-5, 1024).ToList();
        var where = string.Join(" or ", scores.Select(s => $"Score = {s}"));
        var plan = new QueryPlanner(RqlPostsFixture.Definition, null).Where(RqlParser.Parse("from index 'Posts' where " + where).Where);
        Assert.Equal(1024, Assert.IsType<BoolQuery>(plan).Should.Count);
        var and = new QueryPlanner(RqlPostsFixture.Definition, null).Where(RqlParser.Parse("from index 'Posts' where Score > 1 and Score < 9 and Type = '1'").Where);
        Assert.Equal(3, Assert.IsType<BoolQuery>(and).Must.Count);
        var expected = Expected(Posts.Where(p => scores.Contains((int)p.Score)));
        Assert.Equal(expected, await Ids(where));
        Assert.Equal(expected, await Ids("Score in (" + string.Join(", ", scores) + ")"));
        // Mixed operators keep their grouping.
        Assert.Equal(Expected(Posts.Where(p => p.Score == 1 || (p.Score == 2 && p.Type == "1") || p.Score == 3)), await Ids("Score = 1 or Score = 2 and Type = '1' or Score = 3"));
    }

    [Fact]
    public async Task Order_by_limit_offset_and_projections_follow_the_data()
    {
        var page = await Run("from index 'Posts' where Type = '1' order by Score desc select Title, Score limit 10 offset 5");
        var expected = Posts.Where(p => p.Type == "1").OrderByDescending(p => p.Score).ThenBy(p => p.Id, StringComparer.Ordinal).Skip(5).Take(10).ToList();
        Assert.Equal(expected.Select(p => p.Id), page.Hits.Select(h => h.Id));
        Assert.Equal(Posts.Count(p => p.Type == "1"), page.TotalHits);
        Assert.Equal(expected[0].Score.ToString(), page.Hits[0].Stored["Score@stored"].Single());
        Assert.Equal(JsonSerializer.Serialize(expected[0].Title), page.Hits[0].Stored["Title@stored"].Single());

        var byTag = await Run("from index 'Posts' where exists(Tags) order by Tags limit 3");
        Assert.Equal(Posts.Where(p => p.Tags.Length > 0).OrderBy(p => p.Tags.Min(StringComparer.Ordinal), StringComparer.Ordinal).ThenBy(p => p.Id, StringComparer.Ordinal).Take(3).Select(p => p.Id),
            byTag.Hits.Select(h => h.Id));

        var scored = await Run("from index 'Posts' where search(Title, 'sources answers') order by score() limit 20");
        Assert.True(scored.Hits.Zip(scored.Hits.Skip(1)).All(p => p.First.Score >= p.Second.Score));
    }
}
