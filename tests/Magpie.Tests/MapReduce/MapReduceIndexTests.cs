using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Queries;

namespace Magpie.Tests.MapReduce;

/// <summary>
/// Map/reduce indexes in the embedded magpie, over HTTP: posts and total score per user on the Stack Exchange
/// sample, compared with the same aggregate computed from the XML, then again after edits, deletes and
/// re-creations; the seed's multi-map/reduce (players and their characters); the PUT-time shape check.
/// </summary>
public sealed class MapReduceIndexTests(ImportedSampleFixture fx) : IClassFixture<ImportedSampleFixture>
{
    private HttpClient Http => fx.Magpie.Http;

    private const string PostsByUser = """
        {
          "maps": ["map('Posts', p => ({ User: 'users/' + p.OwnerUserId, Count: 1, Score: p.Score || 0 }))"],
          "reduce": "groupBy(x => x.User).aggregate(g => ({ User: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0), Score: g.values.reduce((s, v) => s + v.Score, 0) }))"
        }
        """;

    [Fact]
    public async Task Posts_and_score_per_user_equal_the_xml_before_and_after_edits_deletes_and_recreations()
    {
        var put = await Http.PutAsync("indexes/Posts/ByUser", HttpJson.Json(PostsByUser));
        Assert.Equal(HttpStatusCode.NoContent, put.StatusCode);
        // The model: post id → (user, score), from the XML; edits below change both it and the store.
        var model = fx.Posts.ToDictionary(p => "posts/" + (string)p.Attribute("Id")!,
            p => (User: "users/" + ((string?)p.Attribute("OwnerUserId") ?? "undefined"), Score: (long?)p.Attribute("Score") ?? 0));
        await AssertEqualsModelAsync(model);

        var top = await QueryAsync("from index 'Posts/ByUser' where Count > 10 order by Count desc, User");
        var expectedTop = Expected(model).Where(e => e.Value.Count > 10).OrderByDescending(e => e.Value.Count).ThenBy(e => e.Key, StringComparer.Ordinal).Select(e => e.Key).ToList();
        Assert.NotEmpty(expectedTop);
        Assert.Equal(expectedTop, top.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("User").GetString()!).ToList());

        // Edits: the busiest user's posts move, lose score, or go; a deleted post comes back; a new user appears.
        var busiest = expectedTop[0];
        var theirs = model.Where(m => m.Value.User == busiest).Select(m => m.Key).Order(StringComparer.Ordinal).ToList();
        foreach (var id in theirs.Take(3))
        {
            Assert.True((await Http.DeleteAsync($"docs/{id}")).IsSuccessStatusCode);
            model.Remove(id);
        }
        var moved = theirs[3];
        var patched = await Http.PatchAsync($"docs/{moved}", HttpJson.Json("""[{"op":"replace","path":"/OwnerUserId","value":777001},{"op":"replace","path":"/Score","value":5}]"""));
        Assert.True(patched.IsSuccessStatusCode, await patched.Content.ReadAsStringAsync());
        model[moved] = ("users/777001", 5);
        Assert.True((await Http.PutAsync($"docs/{theirs[0]}", HttpJson.Json("""{"OwnerUserId":777002,"Score":40,"PostTypeId":1}"""))).IsSuccessStatusCode);
        model[theirs[0]] = ("users/777002", 40);
        await AssertEqualsModelAsync(model);

        // Every post of one user deleted: the user's result disappears.
        foreach (var id in model.Where(m => m.Value.User == "users/777001").Select(m => m.Key).ToList())
        {
            Assert.True((await Http.DeleteAsync($"docs/{id}")).IsSuccessStatusCode);
            model.Remove(id);
        }
        await AssertEqualsModelAsync(model);
        Assert.Equal(0, (await QueryAsync("from index 'Posts/ByUser' where User = 'users/777001'")).GetProperty("totalResults").GetInt64());
    }

    [Fact]
    public async Task Players_and_their_characters_merge_into_one_result_per_player()
    {
        foreach (var (id, json) in new[]
        {
            ("players/1", """{"Name":"Ann","Adult":false}"""), ("players/2", """{"Name":"Bob","Adult":true}"""), ("players/3", """{"Name":"Cy","Adult":false}"""),
            ("characters/1", """{"Player":"players/1","Name":"Hero","Level":50}"""), ("characters/2", """{"Player":"players/1","Name":"Rogue","Level":10}"""),
            ("characters/3", """{"Player":"players/2","Name":"Mage","Level":60}"""), ("characters/4", """{"Player":"players/3","Name":"Monk","Level":20}"""),
        })
            Assert.True((await Http.PutAsync($"docs/{id}", HttpJson.Json(json))).IsSuccessStatusCode);
        var put = await Http.PutAsync("indexes/Players/WithCharacters", HttpJson.Json("""
            {
              "maps": [
                "map('Players', p => ({ Player: id(p), Adult: p.Adult, Characters: [], MaxLevel: 0 }))",
                "map('Characters', c => ({ Player: c.Player, Adult: false, Characters: [{ Id: id(c), Name: c.Name }], MaxLevel: c.Level }))"
              ],
              "reduce": "groupBy(x => x.Player).aggregate(g => ({ Player: g.key, Adult: g.values.some(x => x.Adult), Characters: g.values.flatMap(x => x.Characters), MaxLevel: Math.max(...g.values.map(x => x.MaxLevel)) }))"
            }
            """));
        Assert.Equal(HttpStatusCode.NoContent, put.StatusCode);

        var all = await QueryAsync("from index 'Players/WithCharacters' order by Player");
        Assert.Equal(3, all.GetProperty("totalResults").GetInt64());
        var ann = all.GetProperty("results")[0];
        Assert.Equal("players/1", ann.GetProperty("Player").GetString());
        Assert.False(ann.GetProperty("Adult").GetBoolean());
        Assert.Equal(["characters/1", "characters/2"], ann.GetProperty("Characters").EnumerateArray().Select(c => c.GetProperty("Id").GetString()!).Order().ToList());
        Assert.True(all.GetProperty("results")[1].GetProperty("Adult").GetBoolean());

        // The seed's query: players who aren't adults with a character over level 40.
        var query = "from index 'Players/WithCharacters' where Adult = 'false' and MaxLevel > 40";
        Assert.Equal(["players/1"], Players(await QueryAsync(query)));
        // Cy's monk levels up; Ann's hero is deleted.
        Assert.True((await Http.PutAsync("docs/characters/4", HttpJson.Json("""{"Player":"players/3","Name":"Monk","Level":45}"""))).IsSuccessStatusCode);
        Assert.True((await Http.DeleteAsync("docs/characters/1")).IsSuccessStatusCode);
        Assert.Equal(["players/3"], Players(await QueryAsync(query)));
    }

    [Theory]
    [InlineData("groupBy(x => x.User).aggregate(g => ({ User: g.key, Count: g.values.length }))", "'Score'")]
    [InlineData("groupBy(x => x.User).aggregate(g => ({ User: g.key, Count: 1, Score: 0 )", "reduce:")]
    public async Task A_reduce_that_does_not_return_every_map_field_or_does_not_parse_is_refused(string reduce, string expected)
    {
        var body = JsonSerializer.Serialize(new { maps = new[] { "map('Posts', p => ({ User: p.OwnerUserId, Count: 1, Score: p.Score }))" }, reduce });
        var put = await Http.PutAsync("indexes/Bad/Reduce", HttpJson.Json(body));
        Assert.Equal(HttpStatusCode.BadRequest, put.StatusCode);
        Assert.Contains(expected, (await put.JsonAsync()).GetProperty("detail").GetString());
    }

    private static Dictionary<string, (int Count, long Score)> Expected(Dictionary<string, (string User, long Score)> model) =>
        model.Values.GroupBy(v => v.User).ToDictionary(g => g.Key, g => (g.Count(), g.Sum(v => v.Score)));

    private async Task AssertEqualsModelAsync(Dictionary<string, (string User, long Score)> model)
    {
        await QueryAsync("from index 'Posts/ByUser' limit 1"); // waits for non-stale
        var stream = await Http.PostAsJsonAsync("streams/queries", new { query = "from index 'Posts/ByUser'" });
        Assert.True(stream.IsSuccessStatusCode, await stream.Content.ReadAsStringAsync());
        var actual = (await stream.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries)
            .Select(l => JsonDocument.Parse(l).RootElement)
            .ToDictionary(r => r.GetProperty("User").GetString()!, r => (r.GetProperty("Count").GetInt32(), r.GetProperty("Score").GetInt64()));
        Assert.Equal(Expected(model).OrderBy(e => e.Key, StringComparer.Ordinal), actual.OrderBy(e => e.Key, StringComparer.Ordinal));
    }

    private async Task<JsonElement> QueryAsync(string rql)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = rql, pageSize = 1024, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        return await r.JsonAsync();
    }

    private static List<string> Players(JsonElement response) =>
        response.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("Player").GetString()!).Order().ToList();
}
