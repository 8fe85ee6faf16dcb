using System.Net;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;
using Magpie.Tests.Queries;

namespace Magpie.Tests.Indexing;

/// <summary>
/// <c>load()</c> in maps, embedded, on the Stack Exchange sample: posts indexed with their owner's DisplayName follow the owner —
/// renamed, deleted, created late — across a restart.
/// </summary>
public sealed class LoadDocumentTests(ImportedSampleFixture fx) : IClassFixture<ImportedSampleFixture>
{
    private static readonly StackExchangeXml Xml = new(RepoPaths.StackExchangeSample);
    private HttpClient Http => fx.Magpie.Http;

    private const string Index = "Posts/WithOwner";

    private const string Definition = """
        { "maps": ["map('Posts', p => { const u = load(p.OwnerUserId ? 'users/' + p.OwnerUserId : null, 'Users'); return { OwnerId: p.OwnerUserId ?? null, Owner: u ? u.DisplayName : null }; })"] }
        """;

    /// <summary>The posts whose owner's name the index answers is <paramref name="name"/>.</summary>
    private async Task<List<string>> PostsOwnedByAsync(string? name)
    {
        var r = await Http.QueryNonStaleAsync($"from index '{Index}' where Owner = {(name is null ? "null" : JsonSerializer.Serialize(name).Replace('"', '\''))} select id() as Id");
        return r.GetProperty("results").EnumerateArray().Select(x => x.GetProperty("Id").GetString()!).Order().ToList();
    }

    [Fact]
    public async Task Posts_answer_with_their_owners_current_name_renamed_deleted_or_created_late()
    {
        await Http.PutIndexAsync(Index, Definition);
        var names = Xml.Users.ToDictionary(u => (int)u.Attribute("Id")!, u => (string)u.Attribute("DisplayName")!);
        var owned = Xml.Posts.Where(p => p.Attribute("OwnerUserId") is not null).GroupBy(p => (int)p.Attribute("OwnerUserId")!)
            .ToDictionary(g => g.Key, g => g.Select(p => "posts/" + (string)p.Attribute("Id")!).Order().ToList());
        // The owner with most posts whose name no other user has.
        var (owner, posts) = owned.Where(o => names.ContainsKey(o.Key) && names.Values.Count(n => n == names[o.Key]) == 1)
            .OrderByDescending(o => o.Value.Count).First();
        Assert.True(posts.Count >= 3, $"the busiest owner has {posts.Count} posts");
        Assert.Equal(posts, await PostsOwnedByAsync(names[owner]));

        // Renamed: every post of the user answers with the new name, none with the old.
        Assert.True((await Http.PatchAsync($"users/{owner}", """[{"op":"replace","path":"/DisplayName","value":"Renamed Owner"}]""")).IsSuccessStatusCode);
        Assert.Equal(posts, await PostsOwnedByAsync("Renamed Owner"));
        Assert.Empty(await PostsOwnedByAsync(names[owner]));

        // What each post loaded is kept across a restart: a rename after it still reaches them.
        await fx.Magpie.StopAsync();
        await fx.Magpie.StartAsync();
        Assert.True((await Http.PatchAsync($"users/{owner}", """[{"op":"replace","path":"/DisplayName","value":"After Restart"}]""")).IsSuccessStatusCode);
        Assert.Equal(posts, await PostsOwnedByAsync("After Restart"));

        // Deleted: its posts answer with none.
        Assert.Equal(HttpStatusCode.NoContent, (await Http.DeleteAsync($"docs/users/{owner}")).StatusCode);
        Assert.Empty(await PostsOwnedByAsync("After Restart"));
        Assert.Subset((await PostsOwnedByAsync(null)).ToHashSet(), posts.ToHashSet());

        // Created again (a document loaded before it existed): its posts pick the name up.
        Assert.True((await Http.PutAsync($"users/{owner}", ("""{"DisplayName":"Back Again"}"""))).IsSuccessStatusCode);
        Assert.Equal(posts, await PostsOwnedByAsync("Back Again"));
    }

    [Fact]
    public async Task A_map_reduce_index_counts_posts_per_owner_name_and_follows_a_rename()
    {
        await Http.PutIndexAsync("Posts/PerOwnerName", """
            {
              "maps": ["map('Posts', p => { const u = p.OwnerUserId ? load('users/' + p.OwnerUserId) : null; return { Owner: u ? u.DisplayName : 'nobody', Count: 1 }; })"],
              "reduce": "groupBy(x => x.Owner).aggregate(g => ({ Owner: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0) }))"
            }
            """);
        var names = Xml.Users.ToDictionary(u => (int)u.Attribute("Id")!, u => (string)u.Attribute("DisplayName")!);
        var perOwner = Xml.Posts.Where(p => p.Attribute("OwnerUserId") is not null).GroupBy(p => (int)p.Attribute("OwnerUserId")!).ToDictionary(g => g.Key, g => g.Count());
        // The second busiest owner with a name of their own (the other test of this class renames the busiest).
        var owner = perOwner.Where(o => names.ContainsKey(o.Key) && names.Values.Count(n => n == names[o.Key]) == 1)
            .OrderByDescending(o => o.Value).Skip(1).First().Key;
        async Task<int?> CountAsync(string name)
        {
            var r = await Http.QueryNonStaleAsync($"from index 'Posts/PerOwnerName' where Owner = {JsonSerializer.Serialize(name).Replace('"', '\'')}");
            return r.GetProperty("results").EnumerateArray().Select(x => (int?)x.GetProperty("Count").GetInt32()).SingleOrDefault();
        }
        Assert.Equal(perOwner[owner], await CountAsync(names[owner]));
        Assert.True((await Http.PatchAsync($"users/{owner}", """[{"op":"replace","path":"/DisplayName","value":"Counted Anew"}]""")).IsSuccessStatusCode);
        Assert.Equal(perOwner[owner], await CountAsync("Counted Anew"));
        Assert.Null(await CountAsync(names[owner]));
    }
}
