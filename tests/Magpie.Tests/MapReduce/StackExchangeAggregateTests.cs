using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;
using Magpie.Tests.Queries;

namespace Magpie.Tests.MapReduce;

/// <summary>
/// Aggregates over the arrays the importer builds (comments inside their post, badges inside their user), each
/// compared with the same count computed straight from the XML, then after edits, deletes and re-creations; badge
/// counts also written back as documents (outputReduceToCollection) that another index queries; output loops refused.
/// Its own magpie process (a class fixture is per class): these tests edit posts and users the other map/reduce tests count.
/// </summary>
public sealed class StackExchangeAggregateTests(ImportedSampleFixture fx) : IClassFixture<ImportedSampleFixture>
{
    private static readonly StackExchangeXml Xml = new(RepoPaths.StackExchangeSample);

    private HttpClient Http => fx.Magpie.Http;

    [Fact]
    public async Task Comments_per_post_equal_the_xml_before_and_after_edits_deletes_and_recreations()
    {
        await PutIndexAsync("Comments/PerPost", """
            {
              "maps": ["map('Posts', p => p.Comments.map(c => ({ Post: id(p), Count: 1, Score: c.Score || 0 })))"],
              "reduce": "groupBy(x => x.Post).aggregate(g => ({ Post: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0), Score: g.values.reduce((s, v) => s + v.Score, 0) }))"
            }
            """);
        // The model: post → comment scores, from Comments.xml (comments of posts not in the dump are the importer's orphans).
        var posts = Xml.Posts.Select(p => "posts/" + (string)p.Attribute("Id")!).ToHashSet();
        var model = Xml.Comments.Where(c => posts.Contains("posts/" + (string)c.Attribute("PostId")!))
            .GroupBy(c => "posts/" + (string)c.Attribute("PostId")!).ToDictionary(g => g.Key, g => g.Select(c => (long?)c.Attribute("Score") ?? 0).ToList());
        Assert.Equal(Xml.CommentsPerPost().Where(c => c.Value > 0).OrderBy(c => c.Key), model.ToDictionary(m => m.Key, m => m.Value.Count).OrderBy(c => c.Key));
        await AssertCommentsAsync(model);

        var busiest = model.OrderByDescending(m => m.Value.Count).ThenBy(m => m.Key, StringComparer.Ordinal).Select(m => m.Key).Take(3).ToList();
        // Comments cleared on one post, another post deleted, a third re-created with two new comments.
        Assert.True((await Http.PatchAsync($"docs/{busiest[0]}", HttpJson.Json("""[{"op":"replace","path":"/Comments","value":[]}]"""))).IsSuccessStatusCode);
        model.Remove(busiest[0]);
        Assert.True((await Http.DeleteAsync($"docs/{busiest[1]}")).IsSuccessStatusCode);
        model.Remove(busiest[1]);
        Assert.True((await Http.DeleteAsync($"docs/{busiest[2]}")).IsSuccessStatusCode);
        Assert.True((await Http.PutAsync($"docs/{busiest[2]}", HttpJson.Json("""{"PostTypeId":1,"Comments":[{"Score":4},{"Score":6}]}"""))).IsSuccessStatusCode);
        model[busiest[2]] = [4, 6];
        await AssertCommentsAsync(model);
        Assert.Equal(0, (await QueryAsync($"from index 'Comments/PerPost' where Post = '{busiest[0]}'")).GetProperty("totalResults").GetInt64());
    }

    [Fact]
    public async Task Badges_per_name_equal_the_xml_and_are_written_back_as_documents_another_index_queries()
    {
        await PutIndexAsync("Badges/PerName", """
            {
              "maps": ["map('Users', u => u.Badges.map(b => ({ Name: b.Name, Count: 1 })))"],
              "reduce": "groupBy(x => x.Name).aggregate(g => ({ Name: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0) }))",
              "outputReduceToCollection": "BadgeCounts"
            }
            """);
        // The model: user → badge names, from Badges.xml (badges of users not in the dump are orphans).
        var users = Xml.Users.Select(u => "users/" + (string)u.Attribute("Id")!).ToHashSet();
        var model = Xml.Badges.Where(b => users.Contains("users/" + (string)b.Attribute("UserId")!))
            .GroupBy(b => "users/" + (string)b.Attribute("UserId")!).ToDictionary(g => g.Key, g => g.Select(b => (string)b.Attribute("Name")!).ToList());
        await AssertBadgesAsync(model);

        // A user with many badges goes, another is re-created with a badge nobody else has; then that one goes too.
        var richest = model.OrderByDescending(m => m.Value.Count).ThenBy(m => m.Key, StringComparer.Ordinal).First().Key;
        Assert.True((await Http.DeleteAsync($"docs/{richest}")).IsSuccessStatusCode);
        model.Remove(richest);
        Assert.True((await Http.PutAsync("docs/users/990001", HttpJson.Json("""{"DisplayName":"new","Badges":[{"Name":"Autobiographer"},{"Name":"OnlyOne"}]}"""))).IsSuccessStatusCode);
        model["users/990001"] = ["Autobiographer", "OnlyOne"];
        await AssertBadgesAsync(model);
        Assert.Equal(1, (await GetAsync("docs/BadgeCounts/OnlyOne")).GetProperty("Count").GetInt64());

        // Another index reads the output collection like any other.
        var popular = await QueryAsync("from BadgeCounts where Count >= 100 order by Name");
        var expectedPopular = Counts(model).Where(c => c.Value >= 100).Select(c => c.Key).Order(StringComparer.Ordinal).ToList();
        Assert.NotEmpty(expectedPopular);
        Assert.Equal(expectedPopular, popular.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("Name").GetString()!).ToList());

        Assert.True((await Http.DeleteAsync("docs/users/990001")).IsSuccessStatusCode);
        model.Remove("users/990001");
        await AssertBadgesAsync(model);
        Assert.Equal(HttpStatusCode.NotFound, (await Http.GetAsync("docs/BadgeCounts/OnlyOne")).StatusCode);
    }

    [Fact]
    public async Task Output_collections_that_would_feed_their_own_index_or_are_taken_are_refused()
    {
        const string reduce = "groupBy(x => x.Name).aggregate(g => ({ Name: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0) }))";
        string Body(string collection, string output) => JsonSerializer.Serialize(new
        {
            maps = new[] { $"map('{collection}', d => ({{ Name: d.Name, Count: 1 }}))" }, reduce, outputReduceToCollection = output,
        });
        await AssertRefusedAsync("Loop/Self", Body("Tallies", "tallies"), HttpStatusCode.BadRequest, "loop");
        // A chain: Loop/A reads Sources and writes Middles; Loop/B reads Middles and would write Sources.
        await PutIndexAsync("Loop/A", Body("Sources", "Middles"));
        await AssertRefusedAsync("Loop/B", Body("Middles", "Sources"), HttpStatusCode.BadRequest, "'Loop/B' → 'Loop/A'");
        await AssertRefusedAsync("Loop/C", Body("Others", "Middles"), HttpStatusCode.Conflict, "'Loop/A'");
        var mapOnly = JsonSerializer.Serialize(new { maps = new[] { "map('Users', u => ({ Name: u.DisplayName }))" }, outputReduceToCollection = "Names" });
        await AssertRefusedAsync("Loop/MapOnly", mapOnly, HttpStatusCode.BadRequest, "needs a reduce");
        await AssertRefusedAsync("Loop/BadName", Body("Users", "Bad/Name"), HttpStatusCode.BadRequest, "not a valid collection name");
    }

    private async Task AssertRefusedAsync(string name, string body, HttpStatusCode status, string expected)
    {
        var put = await Http.PutAsync($"indexes/{name}", HttpJson.Json(body));
        Assert.Equal(status, put.StatusCode);
        Assert.Contains(expected, (await put.JsonAsync()).GetProperty("detail").GetString());
    }

    private static Dictionary<string, int> Counts(Dictionary<string, List<string>> model) =>
        model.Values.SelectMany(n => n).GroupBy(n => n).ToDictionary(g => g.Key, g => g.Count());

    private async Task AssertBadgesAsync(Dictionary<string, List<string>> model)
    {
        var expected = Counts(model).OrderBy(c => c.Key, StringComparer.Ordinal).ToList();
        var actual = (await StreamAsync("from index 'Badges/PerName'")).ToDictionary(r => r.GetProperty("Name").GetString()!, r => r.GetProperty("Count").GetInt32());
        Assert.Equal(expected, actual.OrderBy(c => c.Key, StringComparer.Ordinal));
        // The output collection holds the same, one document per name.
        var written = (await StreamAsync("from BadgeCounts")).ToDictionary(r => r.GetProperty("Name").GetString()!, r => r.GetProperty("Count").GetInt32());
        Assert.Equal(expected, written.OrderBy(c => c.Key, StringComparer.Ordinal));
        var top = expected.MaxBy(c => c.Value);
        Assert.Equal(top.Value, (await GetAsync($"docs/BadgeCounts/{top.Key}")).GetProperty("Count").GetInt32());
    }

    private async Task AssertCommentsAsync(Dictionary<string, List<long>> model)
    {
        var actual = (await StreamAsync("from index 'Comments/PerPost'"))
            .ToDictionary(r => r.GetProperty("Post").GetString()!, r => (r.GetProperty("Count").GetInt32(), r.GetProperty("Score").GetInt64()));
        Assert.Equal(model.OrderBy(m => m.Key, StringComparer.Ordinal).Select(m => (m.Key, (m.Value.Count, m.Value.Sum()))),
            actual.OrderBy(a => a.Key, StringComparer.Ordinal).Select(a => (a.Key, a.Value)));
    }

    private Task PutIndexAsync(string name, string body) => Http.PutIndexAsync(name, body);

    /// <summary>Every result, after waiting for the index to be non-stale.</summary>
    private async Task<List<JsonElement>> StreamAsync(string rql)
    {
        await QueryAsync(rql + " limit 1");
        var stream = await Http.PostAsJsonAsync("streams/queries", new { query = rql });
        Assert.True(stream.IsSuccessStatusCode, await stream.Content.ReadAsStringAsync());
        return (await stream.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(l => JsonDocument.Parse(l).RootElement).ToList();
    }

    private Task<JsonElement> QueryAsync(string rql) => Http.QueryNonStaleAsync(rql);

    private async Task<JsonElement> GetAsync(string path)
    {
        var r = await Http.GetAsync(path);
        Assert.True(r.IsSuccessStatusCode, $"{path}: {(int)r.StatusCode}");
        return await r.JsonAsync();
    }
}
