using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Xml.Linq;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Queries.Conformance;

/// <summary>Dynamic group by, as RavenDB answers it: an automatic map/reduce index per keys and aggregates, its results equal to LINQ's groups.</summary>
public static class GroupByCases
{
    private static async Task<List<JsonElement>> AllAsync(HttpClient http, string rql)
    {
        var r = await http.PostAsJsonAsync("queries", new { query = rql, pageSize = 1024, waitForNonStaleResults = true, timeoutMs = 120_000 });
        Assert.True(r.IsSuccessStatusCode, $"{rql}\n{await r.Content.ReadAsStringAsync()}");
        var answer = await r.JsonAsync();
        Assert.False(answer.GetProperty("isStale").GetBoolean());
        return answer.GetProperty("results").EnumerateArray().ToList();
    }

    private static string Key(JsonElement e) => e.ValueKind == JsonValueKind.Null ? "null" : e.ToString();

    public static async Task Posts_per_owner_with_their_score_equal_linq(HttpClient http, List<SamplePost> posts)
    {
        var expected = posts.GroupBy(p => p.Owner?.ToString() ?? "null").ToDictionary(g => g.Key, g => (Count: g.Count(), Score: g.Sum(p => p.Score)));
        var results = await AllAsync(http, "from Posts group by OwnerUserId select key() as User, count(), sum(Score)");
        Assert.Equal(expected.Count, results.Count);
        foreach (var r in results)
            Assert.Equal(expected[Key(r.GetProperty("User"))], (r.GetProperty("Count").GetInt32(), r.GetProperty("Score").GetDouble()));
    }

    public static async Task Filtered_and_sorted_groups_of_two_keys_equal_linq(HttpClient http, List<SamplePost> posts)
    {
        var expected = posts.GroupBy(p => (p.Type, Owner: p.Owner?.ToString() ?? "null")).Where(g => g.Count() >= 20)
            .OrderByDescending(g => g.Count()).ThenBy(g => g.Key.Type).Select(g => $"{g.Key.Type}|{g.Key.Owner}|{g.Count()}").ToList();
        var results = await AllAsync(http, "from Posts group by PostTypeId, OwnerUserId where Count >= 20 order by Count desc, PostTypeId select PostTypeId, OwnerUserId, count()");
        Assert.Equal(expected.Select(e => e.Split('|')[2]), results.Select(r => r.GetProperty("Count").GetInt32().ToString()));
        Assert.Equal(expected.Order(), results.Select(r => $"{r.GetProperty("PostTypeId")}|{Key(r.GetProperty("OwnerUserId"))}|{r.GetProperty("Count")}").Order());
    }

    private static (List<string> Users, List<XElement> Badges) UsersAndBadges()
    {
        var root = RepoPaths.StackExchangeSample;
        var users = XDocument.Load(Path.Combine(root, "Users.xml")).Root!.Elements("row").Select(u => (string)u.Attribute("Id")!).ToList();
        var known = users.ToHashSet();
        return (users, XDocument.Load(Path.Combine(root, "Badges.xml")).Root!.Elements("row").Where(b => known.Contains((string)b.Attribute("UserId")!)).ToList());
    }

    /// <summary>RavenDB's "group by array values": <c>group by Badges[].Name</c> is a group per element; a sum through the same array reads each element's own.</summary>
    public static async Task Badges_per_name_through_an_array_equal_linq(HttpClient http)
    {
        var (_, badges) = UsersAndBadges();
        var expected = badges.GroupBy(b => (string)b.Attribute("Name")!).ToDictionary(g => g.Key, g => (g.Count(), g.Sum(b => (int)b.Attribute("Class")!)));
        var results = await AllAsync(http, "from Users group by Badges[].Name select key() as Badge, count(), sum(Badges[].Class) as Classes");
        Assert.Equal(expected, results.ToDictionary(r => r.GetProperty("Badge").GetString()!, r => (r.GetProperty("Count").GetInt32(), r.GetProperty("Classes").GetInt32())));
    }

    /// <summary>
    /// RavenDB's "group by array content": <c>group by array(Badges[].Name)</c> is a group per whole list of names, in the order the
    /// document holds them (none: null). Badges are appended as they arrive, so the lists are read as the store keeps them.
    /// </summary>
    public static async Task Users_per_whole_list_of_badge_names_equal_linq(HttpClient http)
    {
        var users = new List<JsonElement>();
        string? cursor = null;
        do
        {
            var page = await http.GetFromJsonAsync<JsonElement>("docs?collection=Users&pageSize=1024" + (cursor is null ? "" : "&cursor=" + cursor));
            users.AddRange(page.GetProperty("results").EnumerateArray());
            cursor = page.GetProperty("nextCursor").GetString();
        } while (cursor is not null);
        Assert.Equal(UsersAndBadges().Users.Count, users.Count);
        var expected = users.Select(u => u.GetProperty("Badges").EnumerateArray().Select(b => b.GetProperty("Name").GetString()!).ToList())
            .GroupBy(names => names.Count > 0 ? JsonSerializer.Serialize(names) : "null").ToDictionary(g => g.Key, g => g.Count());
        var results = await AllAsync(http, "from Users group by array(Badges[].Name) select key() as Names, count()");
        Assert.Equal(expected, results.ToDictionary(r => r.GetProperty("Names").GetRawText(), r => r.GetProperty("Count").GetInt32()));
    }

    /// <summary><c>count()</c> and <c>sum(F)</c> where a grouped query filters and sorts, as RavenDB's clients write them.</summary>
    public static async Task Groups_filtered_and_sorted_by_their_aggregates_equal_linq(HttpClient http, List<SamplePost> posts)
    {
        var groups = posts.GroupBy(p => p.Owner?.ToString() ?? "null").Where(g => g.Count() > 5).ToList();
        var byCount = await AllAsync(http, "from Posts group by OwnerUserId where count() > 5 order by count() desc select key() as User, count()");
        Assert.Equal(groups.Select(g => g.Count()).OrderDescending(), byCount.Select(r => r.GetProperty("Count").GetInt32()));
        Assert.Equal(groups.Select(g => g.Key).Order(), byCount.Select(r => Key(r.GetProperty("User"))).Order());
        var bySum = await AllAsync(http, "from Posts group by OwnerUserId where count() > 5 order by sum(Score) as double desc select key() as User, sum(Score)");
        Assert.Equal(groups.Select(g => g.Sum(p => p.Score)).OrderDescending(), bySum.Select(r => r.GetProperty("Score").GetDouble()));
    }
}

public sealed class GroupByTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>
{
    [Fact]
    public Task Posts_per_owner_with_their_score_equal_linq() => GroupByCases.Posts_per_owner_with_their_score_equal_linq(fx.Magpie.Http, fx.Posts);

    [Fact]
    public Task Filtered_and_sorted_groups_of_two_keys_equal_linq() => GroupByCases.Filtered_and_sorted_groups_of_two_keys_equal_linq(fx.Magpie.Http, fx.Posts);

    [Fact]
    public Task Badges_per_name_through_an_array_equal_linq() => GroupByCases.Badges_per_name_through_an_array_equal_linq(fx.Magpie.Http);

    [Fact]
    public Task Users_per_whole_list_of_badge_names_equal_linq() => GroupByCases.Users_per_whole_list_of_badge_names_equal_linq(fx.Magpie.Http);

    [Fact]
    public Task Groups_filtered_and_sorted_by_their_aggregates_equal_linq() => GroupByCases.Groups_filtered_and_sorted_by_their_aggregates_equal_linq(fx.Magpie.Http, fx.Posts);

    [Fact]
    public async Task A_later_query_with_the_same_keys_and_aggregates_reuses_the_automatic_index()
    {
        await GroupByCases.Posts_per_owner_with_their_score_equal_linq(fx.Magpie.Http, fx.Posts);
        var before = await fx.Magpie.Http.GetFromJsonAsync<JsonElement>("indexes");
        var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = "from Posts group by OwnerUserId where Count > 100 select sum(Score), count(), key()", waitForNonStaleResults = true });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        Assert.Equal(before.ToString(), (await fx.Magpie.Http.GetFromJsonAsync<JsonElement>("indexes")).ToString());
        Assert.Contains("Auto/Posts/ByCountAndScoreReducedByOwnerUserId", before.ToString());
    }

    [Theory]
    [InlineData("from Posts group by OwnerUserId select Title", "'Title' is none of them")]
    [InlineData("from Posts group by OwnerUserId where Score > 5 select count()", "'Score' is not one of their fields")]
    [InlineData("from Posts group by A, B select key()", "key() names the one group key")]
    [InlineData("from Posts group by A[].B, C[].D select count()", "must go through the same one")]
    [InlineData("from Posts group by OwnerUserId where sum(OwnerUserId) > 1", "sums a group key")]
    [InlineData("from index 'Posts/Text' group by A select count()", "group by runs on a collection")]
    [InlineData("from Posts group by OwnerUserId select sum(OwnerUserId)", "sums a group key")]
    public async Task Grouped_queries_it_cannot_answer_are_refused(string rql, string expected) =>
        await HttpJson.AssertProblem(await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = rql }), HttpStatusCode.BadRequest, expected);
}

/// <summary><c>select distinct</c> and <c>from @all_docs</c> against LINQ.</summary>
public sealed class DistinctAndAllDocsTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>
{
    [Fact]
    public async Task Select_distinct_pages_and_counts_distinct_results()
    {
        var expected = fx.Posts.Where(p => p.Score >= 3).Select(p => p.Type).Distinct().Order().ToList();
        var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = "from Posts where Score >= 3 select distinct PostTypeId", pageSize = 1, start = 1, waitForNonStaleResults = true });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var answer = await r.JsonAsync();
        Assert.Equal(expected.Count, answer.GetProperty("totalResults").GetInt32());
        Assert.Single(answer.GetProperty("results").EnumerateArray());
        using var streamed = await fx.Magpie.Http.PostAsJsonAsync("streams/queries", new { query = "from Posts where Score >= 3 select distinct PostTypeId" });
        var types = (await streamed.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries)
            .Select(l => JsonDocument.Parse(l).RootElement.GetProperty("PostTypeId").GetInt32()).Order().ToList();
        Assert.Equal(expected, types);
    }

    [Fact]
    public async Task All_docs_spans_every_collection()
    {
        // Posts and users both have CreationDate; orders and the other related documents have none.
        var users = System.Xml.Linq.XDocument.Load(Path.Combine(RepoPaths.StackExchangeSample, "Users.xml")).Root!.Elements("row")
            .Count(u => ((string)u.Attribute("CreationDate")!).StartsWith("2012", StringComparison.Ordinal));
        var posts = fx.Posts.Count(p => p.Created.StartsWith("2012", StringComparison.Ordinal));
        var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = "from @all_docs where CreationDate >= '2012-01-01' and CreationDate < '2013-01-01'", pageSize = 0, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        Assert.Equal(users + posts, (await r.JsonAsync()).GetProperty("totalResults").GetInt32());
    }
}
