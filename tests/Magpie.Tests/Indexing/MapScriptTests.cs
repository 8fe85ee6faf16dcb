using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

namespace Magpie.Tests.Indexing;

/// <summary>RavenDB-style JS maps on the real Jint engine: entries per document, several maps, errors and the sandbox.</summary>
[Trait("Category", "Fast")]
public sealed class MapScriptTests
{
    private static ChangeEvent Put(string id, string collection, string json) =>
        new(id, collection, 1, ChangeOp.Put, DateTimeOffset.UtcNow, JsonDocument.Parse(json).RootElement);

    private static Dictionary<string, object?> Values(MappedEntry e) => e.Values.ToDictionary(v => v.Key, v => v.Value);

    [Fact]
    public void A_map_turns_a_document_into_an_entry_with_its_id_and_values()
    {
        var maps = MapScript.Compile(["map('Posts', p => ({ Id: id(p), Title: p.Title, Tags: p.Tags.map(t => t.toUpperCase()), Score: p.Score, Closed: p.Closed || null, Owner: p.Owner }))"], ScriptLimits.Default);
        var entry = Assert.Single(maps.Run(Put("posts/1", "posts", """{"Title":"Hello","Tags":["a","b"],"Score":3,"Owner":{"Name":"Ann"}}""")));
        var v = Values(entry);
        Assert.Equal("posts/1", v["Id"]);
        Assert.Equal("Hello", v["Title"]);
        Assert.Equal(new List<object?> { "A", "B" }, v["Tags"]);
        Assert.Equal(3.0, v["Score"]);
        Assert.Null(v["Closed"]);
        Assert.Equal(new NestedJson("""{"Name":"Ann"}"""), v["Owner"]);
        Assert.Equal(["Posts"], maps.Collections);
    }

    [Fact]
    public void Several_maps_cover_their_own_collections_and_a_map_may_return_many_entries_or_none()
    {
        var maps = MapScript.Compile(
        [
            "map('Posts', p => p.Tags.map(t => ({ Tag: t, Post: id(p) })))",
            "map('Users', function (u) { if (u.Banned) return null; return { Name: u.Name }; })",
        ], ScriptLimits.Default);
        Assert.Equal(["a", "b", "c"], maps.Run(Put("posts/1", "POSTS", """{"Tags":["a","b","c"]}""")).Select(e => Values(e)["Tag"]));
        Assert.Equal("Bo", Values(Assert.Single(maps.Run(Put("users/1", "users", """{"Name":"Bo"}"""))))["Name"]);
        Assert.Empty(maps.Run(Put("users/2", "users", """{"Name":"X","Banned":true}""")));
        Assert.Empty(maps.Run(Put("orders/1", "orders", "{}")));
        Assert.Empty(maps.Run(new ChangeEvent("posts/1", "posts", 2, ChangeOp.Delete, DateTimeOffset.UtcNow, null)));
    }

    [Fact]
    public void Bad_definitions_say_which_map_and_where()
    {
        var syntax = Assert.Throws<ScriptSyntaxException>(() => MapScript.Compile(["map('A', a => ({ X: a.X }))", "map('B', b => ({\n  X: b.X,,\n}))"], ScriptLimits.Default));
        Assert.StartsWith("maps[1]", syntax.Message);
        Assert.Equal(2, syntax.Line);
        Assert.Contains("exactly once", Assert.Throws<ScriptSyntaxException>(() => MapScript.Compile(["var x = 1;"], ScriptLimits.Default)).Message);
        Assert.Contains("exactly once", Assert.Throws<ScriptSyntaxException>(() => MapScript.Compile(["map('A', 5)"], ScriptLimits.Default)).Message);
        Assert.Contains("exactly once", Assert.Throws<ScriptSyntaxException>(() => MapScript.Compile(["map('A', a => a); map('B', b => b)"], ScriptLimits.Default)).Message);
        Assert.Throws<ScriptSyntaxException>(() => MapScript.Compile([], ScriptLimits.Default));
    }

    [Fact]
    public void A_throwing_or_runaway_map_fails_that_document_only()
    {
        var limits = ScriptLimits.Default with { Timeout = TimeSpan.FromMilliseconds(300), MaxStatements = int.MaxValue, MaxAllocatedBytes = long.MaxValue };
        var maps = MapScript.Compile(["map('Posts', p => { if (p.Loop) { while (true) {} } return { T: p.Title.toLowerCase() }; })"], limits);
        Assert.Contains("TypeError", Assert.Throws<ScriptRunException>(() => maps.Run(Put("posts/1", "posts", "{}"))).Message);
        Assert.Contains("longer than 300 ms", Assert.Throws<ScriptRunException>(() => maps.Run(Put("posts/2", "posts", """{"Loop":true,"Title":"x"}"""))).Message);
        Assert.Equal("ok", Values(Assert.Single(maps.Run(Put("posts/3", "posts", """{"Title":"OK"}"""))))["T"]);
    }
}
