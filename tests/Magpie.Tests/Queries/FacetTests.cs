using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Xml.Linq;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Queries;

/// <summary>
/// Facets over the Stack Exchange sample (a magpie process of this class's own: the tests edit posts): term facets with
/// aggregations, numeric and date ranges, numbers as values, for match-all and filtered queries, each compared with the
/// same figures computed from Posts.xml, then again after a patch, a delete and a new post; options (top, order, remaining),
/// facets beside results, facets of a map/reduce index, the column cache's figures, and refusals.
/// </summary>
public sealed class FacetTests(ImportedSampleFixture fx) : IClassFixture<ImportedSampleFixture>
{
    private HttpClient Http => fx.Magpie.Http;

    private const string Index = "Posts/Facets";

    private sealed record Post(string Id, string[] Tags, long Score, long Type, string Created, long Owner);

    private List<Post> Model() => fx.Posts.Select(p => new Post("posts/" + (string)p.Attribute("Id")!,
        ((string?)p.Attribute("Tags") ?? "").Trim('<', '>').Split("><", StringSplitOptions.RemoveEmptyEntries),
        (long)p.Attribute("Score")!, (long)p.Attribute("PostTypeId")!, (string)p.Attribute("CreationDate")!, (long?)p.Attribute("OwnerUserId") ?? 0)).ToList();

    private const string AllFacets = "select facet(Tags, sum(Score), min(Score), max(Score), avg(Score)), " +
        "facet(Score < 0, Score between 0 and 4, Score >= 5, max(Score)) as Scores, " +
        "facet(CreationDate < '2014-01-01', CreationDate >= '2014-01-01') as Created, facet(Type)";

    [Fact]
    public async Task Term_range_and_aggregated_facets_equal_the_xml_for_all_and_filtered_queries_before_and_after_changes()
    {
        await PutIndexAsync(Index, """
            { "maps": ["map('Posts', p => ({ Tags: (p.Tags || '').replace(/^<|>$/g, '').split('><').filter(t => t.length > 0), Score: p.Score, Type: p.PostTypeId, CreationDate: p.CreationDate }))"] }
            """);
        var model = Model();
        await AssertFacetsAsync(model, "", _ => true);
        await AssertFacetsAsync(model, "where Type = 1 and Score >= 2", p => p.Type == 1 && p.Score >= 2);

        // A post re-tagged and re-scored, another deleted, a new one.
        var retagged = model.First(p => p.Tags.Length > 0 && p.Type == 1);
        var deleted = model.Where(p => p.Tags.Length > 1 && p != retagged).MaxBy(p => p.Score)!;
        var originals = new[] { (retagged.Id, await DocumentAsync(retagged.Id)), (deleted.Id, await DocumentAsync(deleted.Id)) };
        var patch = await Http.PatchAsync($"docs/{retagged.Id}", HttpJson.Json("""[{"op":"replace","path":"/Tags","value":"<facet-test><discussion>"},{"op":"replace","path":"/Score","value":42}]"""));
        Assert.True(patch.IsSuccessStatusCode, await patch.Content.ReadAsStringAsync());
        model[model.IndexOf(retagged)] = retagged with { Tags = ["facet-test", "discussion"], Score = 42 };
        Assert.True((await Http.DeleteAsync($"docs/{deleted.Id}")).IsSuccessStatusCode);
        model.Remove(deleted);
        Assert.True((await Http.PutAsync("docs/posts/990001", HttpJson.Json("""{"PostTypeId":1,"Score":-3,"Tags":"<facet-test>","CreationDate":"2019-05-01T10:00:00.000"}"""))).IsSuccessStatusCode);
        model.Add(new Post("posts/990001", ["facet-test"], -3, 1, "2019-05-01T10:00:00.000", 0));

        await AssertFacetsAsync(model, "", _ => true);
        await AssertFacetsAsync(model, "where Type = 1 and Score >= 2", p => p.Type == 1 && p.Score >= 2);

        // Put back as it was (the other tests of this class count the sample as the XML has it): the facets follow again.
        foreach (var (id, original) in originals) Assert.True((await Http.PutAsync($"docs/{id}", HttpJson.Json(original))).IsSuccessStatusCode);
        Assert.True((await Http.DeleteAsync("docs/posts/990001")).IsSuccessStatusCode);
        await AssertFacetsAsync(Model(), "", _ => true);
    }

    /// <summary>The document as stored, without its metadata, to put back later.</summary>
    private async Task<string> DocumentAsync(string id)
    {
        var doc = System.Text.Json.Nodes.JsonNode.Parse(await Http.GetStringAsync($"docs/{id}"))!.AsObject();
        doc.Remove("@metadata");
        return doc.ToJsonString();
    }

    [Fact]
    public async Task Options_cut_and_order_values_and_body_facets_come_beside_a_page_of_results()
    {
        await PutIndexAsync("Posts/FacetOptions", """
            { "maps": ["map('Posts', p => ({ Tags: (p.Tags || '').replace(/^<|>$/g, '').split('><').filter(t => t.length > 0), Score: p.Score }))"] }
            """);
        var model = Model();
        var counts = model.SelectMany(p => p.Tags).GroupBy(t => t).Select(g => (Tag: g.Key, Count: (long)g.Count())).ToList();

        var top = await QueryAsync("from index 'Posts/FacetOptions' select facet(Tags, $options)", new { options = new { top = 5, includeRemaining = true } });
        var expected = counts.OrderByDescending(c => c.Count).ThenBy(c => c.Tag, StringComparer.Ordinal).ToList();
        var facet = top.GetProperty("facets")[0];
        Assert.Equal(expected.Take(5), Values(facet).Select(v => (v.Value.GetString()!, v.Count)));
        Assert.Equal(expected.Count - 5, facet.GetProperty("remainingTerms").GetInt64());
        Assert.Equal(expected.Skip(5).Sum(c => c.Count), facet.GetProperty("remainingHits").GetInt64());
        Assert.Empty(top.GetProperty("results").EnumerateArray());
        Assert.Equal(model.Count, top.GetProperty("totalResults").GetInt64());

        var byValue = await QueryAsync("from index 'Posts/FacetOptions' select facet(Tags, $options) as T", new { options = new { top = 3, order = "valueDesc" } });
        Assert.Equal(counts.OrderByDescending(c => c.Tag, StringComparer.Ordinal).Take(3), Values(byValue.GetProperty("facets")[0]).Select(v => (v.Value.GetString()!, v.Count)));
        Assert.Equal("T", byValue.GetProperty("facets")[0].GetProperty("name").GetString());
        Assert.False(byValue.GetProperty("facets")[0].TryGetProperty("remainingTerms", out _));

        // The request body's facets: beside a page of results, over the same filter.
        var r = await Http.PostAsJsonAsync("queries", new
        {
            query = "from index 'Posts/FacetOptions' where Tags = 'discussion' order by Score desc",
            pageSize = 3,
            facets = new object[]
            {
                new { field = "Tags", top = 2, order = "countDesc" },
                new { name = "Scores", ranges = new[] { "Score < 5", "Score >= 5" }, sum = new[] { "Score" } },
            },
        });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var beside = await r.JsonAsync();
        var discussion = model.Where(p => p.Tags.Contains("discussion")).ToList();
        Assert.Equal(3, beside.GetProperty("results").GetArrayLength());
        Assert.Equal(discussion.Count, beside.GetProperty("totalResults").GetInt64());
        var tagsOfDiscussion = discussion.SelectMany(p => p.Tags).GroupBy(t => t).OrderByDescending(g => g.Count()).ThenBy(g => g.Key, StringComparer.Ordinal).Take(2);
        Assert.Equal(tagsOfDiscussion.Select(g => (g.Key, (long)g.Count())), Values(beside.GetProperty("facets")[0]).Select(v => (v.Value.GetString()!, v.Count)));
        var scores = beside.GetProperty("facets")[1].GetProperty("values");
        Assert.Equal(discussion.Count(p => p.Score < 5), scores[0].GetProperty("count").GetInt64());
        Assert.Equal(discussion.Where(p => p.Score >= 5).Sum(p => p.Score), scores[1].GetProperty("sum").GetProperty("Score").GetDouble());

        // The columns the facets counted with are kept, within the budget, and reported.
        var stats = await (await Http.GetAsync("indexes/Posts/FacetOptions/stats")).JsonAsync();
        var cache = stats.GetProperty("facetCache");
        Assert.True(cache.GetProperty("bytes").GetInt64() > 0);
        Assert.True(cache.GetProperty("engineBytes").GetInt64() <= cache.GetProperty("engineBudgetBytes").GetInt64());
        Assert.True(cache.GetProperty("hits").GetInt64() > 0);
    }

    [Fact]
    public async Task Facets_count_the_results_of_a_map_reduce_index()
    {
        await PutIndexAsync("Posts/PerOwner", """
            {
              "maps": ["map('Posts', p => ({ Owner: p.OwnerUserId || 0, Posts: 1, Score: p.Score }))"],
              "reduce": "groupBy(x => x.Owner).aggregate(g => ({ Owner: g.key, Posts: g.values.reduce((n, v) => n + v.Posts, 0), Score: g.values.reduce((s, v) => s + v.Score, 0) }))"
            }
            """);
        var owners = Model().GroupBy(p => p.Owner).Select(g => (Posts: (long)g.Count(), Score: g.Sum(p => p.Score))).ToList();
        var body = await QueryAsync("from index 'Posts/PerOwner' select facet(Posts, sum(Score)), facet(Posts < 2, Posts between 2 and 9, Posts >= 10) as Activity");
        Assert.Equal(owners.Count, body.GetProperty("totalResults").GetInt64());
        var perCount = body.GetProperty("facets")[0].GetProperty("values").EnumerateArray()
            .ToDictionary(v => v.GetProperty("value").GetInt64(), v => (v.GetProperty("count").GetInt64(), v.GetProperty("sum").GetProperty("Score").GetDouble()));
        Assert.Equal(owners.GroupBy(o => o.Posts).OrderBy(g => g.Key).Select(g => (g.Key, ((long)g.Count(), (double)g.Sum(o => o.Score)))),
            perCount.OrderBy(p => p.Key).Select(p => (p.Key, p.Value)));
        var activity = body.GetProperty("facets")[1].GetProperty("values").EnumerateArray().Select(v => v.GetProperty("count").GetInt64()).ToList();
        Assert.Equal([owners.Count(o => o.Posts < 2), owners.Count(o => o.Posts is >= 2 and <= 9), owners.Count(o => o.Posts >= 10)], activity);
    }

    [Theory]
    [InlineData("from index 'Posts/Facets' select facet(Tags, Score < 3)", "not both")]
    [InlineData("from index 'Posts/Facets' select facet(Tags), Score", "either facet")]
    [InlineData("from index 'Posts/Facets' select facet(Tags, Type)", "one field")]
    [InlineData("from index 'Posts/Facets' select facet(Tags, $nope)", "$nope")]
    [InlineData("from index 'Posts/Facets' select facet(Score <)", "expected a value")]
    public async Task Bad_facets_are_refused_with_a_problem_naming_the_mistake(string rql, string expected)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = rql });
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Contains(expected, (await r.JsonAsync()).GetProperty("detail").GetString());
    }

    [Fact]
    public async Task Bad_body_facets_and_streamed_facets_are_refused()
    {
        foreach (var (facets, expected) in new (object, string)[]
        {
            (new object[] { new { field = "Tags", ranges = new[] { "Score < 1" } } }, "not both"),
            (new object[] { new { field = "Tags", order = "sideways" } }, "\"order\""),
            (new object[] { new { ranges = new[] { "Score <" } } }, "range 'Score <'"),
            (new object[] { 42 }, "a facet is an object"),
        })
        {
            var r = await Http.PostAsJsonAsync("queries", new { query = "from Posts", facets });
            Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
            Assert.Contains(expected, (await r.JsonAsync()).GetProperty("detail").GetString());
        }
        var stream = await Http.PostAsJsonAsync("streams/queries", new { query = "from Posts select facet(Tags)" });
        Assert.Equal(HttpStatusCode.BadRequest, stream.StatusCode);
    }

    private async Task AssertFacetsAsync(List<Post> model, string where, Func<Post, bool> filter)
    {
        var body = await QueryAsync($"from index '{Index}' {where} {AllFacets}");
        var posts = model.Where(filter).ToList();
        Assert.Equal(posts.Count, body.GetProperty("totalResults").GetInt64());
        var facets = body.GetProperty("facets");

        // Tags: count, sum, min, max and average of Score per tag; every tag, most used first.
        var tags = facets[0];
        Assert.Equal("Tags", tags.GetProperty("name").GetString());
        var expectedTags = posts.SelectMany(p => p.Tags.Select(t => (Tag: t, p.Score))).GroupBy(x => x.Tag)
            .OrderByDescending(g => g.Count()).ThenBy(g => g.Key, StringComparer.Ordinal)
            .Select(g => (g.Key, (long)g.Count(), (double)g.Sum(x => x.Score), (double)g.Min(x => x.Score), (double)g.Max(x => x.Score), g.Average(x => x.Score)))
            .ToList();
        var actualTags = tags.GetProperty("values").EnumerateArray().Select(v => (v.GetProperty("value").GetString()!, v.GetProperty("count").GetInt64(),
            Figure(v, "sum"), Figure(v, "min"), Figure(v, "max"), Math.Round(Figure(v, "avg"), 9))).ToList();
        Assert.Equal(expectedTags.Select(t => t with { Item6 = Math.Round(t.Item6, 9) }), actualTags);

        // Score ranges, with the highest score in each.
        var ranges = facets[1].GetProperty("values").EnumerateArray().ToList();
        Assert.Equal(["Score < 0", "Score between 0 and 4", "Score >= 5"], ranges.Select(r => r.GetProperty("value").GetString()));
        Func<Post, bool>[] inRange = [p => p.Score < 0, p => p.Score is >= 0 and <= 4, p => p.Score >= 5];
        for (var i = 0; i < 3; i++)
        {
            var matching = posts.Where(inRange[i]).ToList();
            Assert.Equal(matching.Count, ranges[i].GetProperty("count").GetInt64());
            var max = ranges[i].GetProperty("max").GetProperty("Score");
            if (matching.Count == 0) Assert.Equal(JsonValueKind.Null, max.ValueKind);
            else Assert.Equal(matching.Max(p => p.Score), max.GetDouble());
        }

        // Date ranges, and numbers as facet values.
        var created = facets[2].GetProperty("values").EnumerateArray().Select(v => v.GetProperty("count").GetInt64()).ToList();
        Assert.Equal([posts.Count(p => string.CompareOrdinal(p.Created, "2014-01-01") < 0), posts.Count(p => string.CompareOrdinal(p.Created, "2014-01-01") >= 0)], created);
        var types = facets[3].GetProperty("values").EnumerateArray().Select(v => (v.GetProperty("value").GetInt64(), v.GetProperty("count").GetInt64())).ToList();
        Assert.Equal(posts.GroupBy(p => p.Type).OrderByDescending(g => g.Count()).ThenBy(g => g.Key).Select(g => (g.Key, (long)g.Count())), types);
    }

    private static double Figure(JsonElement value, string op) => value.GetProperty(op).GetProperty("Score").GetDouble();

    private static IEnumerable<(JsonElement Value, long Count)> Values(JsonElement facet) =>
        facet.GetProperty("values").EnumerateArray().Select(v => (v.GetProperty("value"), v.GetProperty("count").GetInt64()));

    private async Task PutIndexAsync(string name, string body)
    {
        var put = await Http.PutAsync($"indexes/{name}", HttpJson.Json(body));
        Assert.True(put.StatusCode == HttpStatusCode.NoContent, await put.Content.ReadAsStringAsync());
    }

    private async Task<JsonElement> QueryAsync(string rql, object? parameters = null)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = rql, parameters, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var body = await r.JsonAsync();
        Assert.False(body.GetProperty("isStale").GetBoolean(), rql);
        return body;
    }
}
