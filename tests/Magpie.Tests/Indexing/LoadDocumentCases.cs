using System.Net;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;

namespace Magpie.Tests.Indexing;

/// <summary>
/// <c>load()</c> in a map, the same case embedded and with Kafka indexers: posts of the Stack Exchange sample indexed with their
/// owner's DisplayName follow the owner — renamed, deleted, created again — across a restart of what indexes them.
/// </summary>
public static class LoadDocumentCases
{
    private static readonly StackExchangeXml Xml = new(RepoPaths.StackExchangeSample);

    public const string Definition = """
        { "maps": ["map('Posts', p => { const u = load(p.OwnerUserId ? 'users/' + p.OwnerUserId : null, 'Users'); return { OwnerId: p.OwnerUserId ?? null, Owner: u ? u.DisplayName : null }; })"] }
        """;

    /// <param name="definer">Where the index is defined.</param>
    /// <param name="writer">Where users are written (the ingest).</param>
    /// <param name="query">Where the index is asked.</param>
    /// <param name="restart">Restarts what indexes (kill -9 or stop, then start).</param>
    /// <param name="written">Waits until a write has reached the change feed (Kafka mode: the relay published it).</param>
    public static async Task Posts_follow_their_owner(HttpClient definer, HttpClient writer, HttpClient query, string index, Func<Task> restart, Func<Task> written)
    {
        async Task<List<string>> PostsOwnedByAsync(string? name)
        {
            await written();
            var r = await query.QueryNonStaleAsync($"from index '{index}' where Owner = {(name is null ? "null" : JsonSerializer.Serialize(name).Replace('"', '\''))} select id() as Id");
            return r.GetProperty("results").EnumerateArray().Select(x => x.GetProperty("Id").GetString()!).Order().ToList();
        }
        await definer.PutIndexAsync(index, Definition);
        var names = Xml.Users.ToDictionary(u => (int)u.Attribute("Id")!, u => (string)u.Attribute("DisplayName")!);
        var owned = Xml.Posts.Where(p => p.Attribute("OwnerUserId") is not null).GroupBy(p => (int)p.Attribute("OwnerUserId")!)
            .ToDictionary(g => g.Key, g => g.Select(p => "posts/" + (string)p.Attribute("Id")!).Order().ToList());
        // The owner with most posts whose name no other user has.
        var (owner, posts) = owned.Where(o => names.ContainsKey(o.Key) && names.Values.Count(n => n == names[o.Key]) == 1)
            .OrderByDescending(o => o.Value.Count).First();
        Assert.True(posts.Count >= 3, $"the busiest owner has {posts.Count} posts");
        // Put back as it was at the end: other cases of the same deployment count this user's badges.
        var original = System.Text.Json.Nodes.JsonNode.Parse(await writer.GetStringAsync($"docs/users/{owner}"))!.AsObject();
        original.Remove("@metadata");
        try { await Renamed(); }
        finally { Assert.True((await writer.PutAsync($"users/{owner}", original.ToJsonString())).IsSuccessStatusCode); }

        async Task Renamed()
        {
            Assert.Equal(posts, await PostsOwnedByAsync(names[owner]));

            // Renamed: every post of the user answers with the new name, none with the old.
            Assert.True((await writer.PatchAsync($"users/{owner}", """[{"op":"replace","path":"/DisplayName","value":"Renamed Owner"}]""")).IsSuccessStatusCode);
            Assert.Equal(posts, await PostsOwnedByAsync("Renamed Owner"));
            Assert.Empty(await PostsOwnedByAsync(names[owner]));

            // What each post loaded is kept across a restart: a rename after it still reaches them.
            await restart();
            Assert.True((await writer.PatchAsync($"users/{owner}", """[{"op":"replace","path":"/DisplayName","value":"After Restart"}]""")).IsSuccessStatusCode);
            Assert.Equal(posts, await PostsOwnedByAsync("After Restart"));

            // Deleted: its posts answer with none.
            Assert.Equal(HttpStatusCode.NoContent, (await writer.DeleteAsync($"docs/users/{owner}")).StatusCode);
            Assert.Empty(await PostsOwnedByAsync("After Restart"));
            Assert.Subset((await PostsOwnedByAsync(null)).ToHashSet(), posts.ToHashSet());

            // Created again (a document loaded before it existed): its posts pick the name up.
            Assert.True((await writer.PutAsync($"users/{owner}", ("""{"DisplayName":"Back Again"}"""))).IsSuccessStatusCode);
            Assert.Equal(posts, await PostsOwnedByAsync("Back Again"));
        }
    }

    /// <summary>A map/reduce index counting posts per owner name (loaded): a rename moves the owner's posts to the new name's key.</summary>
    public static async Task Owner_counts_follow_a_rename(HttpClient definer, HttpClient writer, HttpClient query, string index, Func<Task> written)
    {
        await definer.PutIndexAsync(index, """
            {
              "maps": ["map('Posts', p => { const u = p.OwnerUserId ? load('users/' + p.OwnerUserId) : null; return { Owner: u ? u.DisplayName : 'nobody', Count: 1 }; })"],
              "reduce": "groupBy(x => x.Owner).aggregate(g => ({ Owner: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0) }))"
            }
            """);
        var names = Xml.Users.ToDictionary(u => (int)u.Attribute("Id")!, u => (string)u.Attribute("DisplayName")!);
        var perOwner = Xml.Posts.Where(p => p.Attribute("OwnerUserId") is not null).GroupBy(p => (int)p.Attribute("OwnerUserId")!).ToDictionary(g => g.Key, g => g.Count());
        // The second busiest owner with a name of their own (the other case renames the busiest).
        var owner = perOwner.Where(o => names.ContainsKey(o.Key) && names.Values.Count(n => n == names[o.Key]) == 1)
            .OrderByDescending(o => o.Value).Skip(1).First().Key;
        async Task<int?> CountAsync(string name)
        {
            await written();
            var r = await query.QueryNonStaleAsync($"from index '{index}' where Owner = {JsonSerializer.Serialize(name).Replace('"', '\'')}");
            return r.GetProperty("results").EnumerateArray().Select(x => (int?)x.GetProperty("Count").GetInt32()).SingleOrDefault();
        }
        Assert.Equal(perOwner[owner], await CountAsync(names[owner]));
        Assert.True((await writer.PatchAsync($"users/{owner}", """[{"op":"replace","path":"/DisplayName","value":"Counted Anew"}]""")).IsSuccessStatusCode);
        Assert.Equal(perOwner[owner], await CountAsync("Counted Anew"));
        Assert.Null(await CountAsync(names[owner]));
        // Put back: other cases of the same deployment know this user by name.
        Assert.True((await writer.PatchAsync($"users/{owner}", $$"""[{"op":"replace","path":"/DisplayName","value":{{JsonSerializer.Serialize(names[owner])}}}]""")).IsSuccessStatusCode);
        Assert.Equal(perOwner[owner], await CountAsync(names[owner]));
    }
}
