using System.Text.Json;
using Magpie.Indexer.MapReduce;
using Magpie.Scripting;

namespace Magpie.Tests.MapReduce;

/// <summary>
/// Reduce trees against a from-scratch reduce: a key with enough entries for a tree several levels deep,
/// random puts, updates and deletes, and after every batch the tree's result equals the aggregate of every
/// live entry computed directly. The reduce is RavenDB's JS form on the real Jint engine.
/// </summary>
[Trait("Category", "Fast")]
public sealed class ReduceTreeTests
{
    private const string SumAndCount = "groupBy(x => x.User).aggregate(g => ({ User: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0), Score: g.values.reduce((s, v) => s + v.Score, 0) }))";

    [Fact]
    public void Random_changes_to_a_deep_tree_always_give_what_a_from_scratch_reduce_gives()
    {
        var reduce = ReduceScript.Compile(SumAndCount, ScriptLimits.Default);
        var tree = new ReduceTree("\"users/1\"", reduce.Aggregate, pageSize: 8, fanOut: 4);
        var live = new Dictionary<string, List<(int Count, int Score)>>();
        var random = new Random(17);
        for (var batch = 0; batch < 60; batch++)
        {
            for (var i = 0; i < 40; i++)
            {
                var doc = $"posts/{random.Next(400)}";
                if (random.NextDouble() < 0.2) { tree.Remove(doc); live.Remove(doc); continue; }
                // A document may contribute several entries (a map returning an array).
                var entries = Enumerable.Range(0, random.Next(1, 4)).Select(_ => (Count: 1, Score: random.Next(-5, 50))).ToList();
                tree.Put(doc, entries.Select(e => Entry(e.Count, e.Score)).ToList());
                live[doc] = entries;
            }
            var result = tree.Reduce();
            var all = live.Values.SelectMany(e => e).ToList();
            Assert.Equal(all.Count, tree.Count);
            Assert.NotNull(result);
            var r = JsonDocument.Parse(result).RootElement;
            Assert.Equal("users/1", r.GetProperty("User").GetString());
            Assert.Equal(all.Count, r.GetProperty("Count").GetInt32());
            Assert.Equal(all.Sum(e => e.Score), r.GetProperty("Score").GetInt32());
        }
        Assert.True(tree.Depth >= 4, $"the tree is {tree.Depth} levels deep");
    }

    [Fact]
    public void A_key_whose_last_entry_goes_has_no_result()
    {
        var reduce = ReduceScript.Compile(SumAndCount, ScriptLimits.Default);
        var tree = new ReduceTree("\"users/2\"", reduce.Aggregate, pageSize: 4, fanOut: 2);
        for (var i = 0; i < 20; i++) tree.Put($"posts/{i}", [Entry(1, i)]);
        Assert.Equal(20, JsonDocument.Parse(tree.Reduce()!).RootElement.GetProperty("Count").GetInt32());
        for (var i = 0; i < 20; i++) tree.Remove($"posts/{i}");
        Assert.Null(tree.Reduce());
        tree.Put("posts/99", [Entry(1, 7)]);
        Assert.Equal(7, JsonDocument.Parse(tree.Reduce()!).RootElement.GetProperty("Score").GetInt32());
    }

    [Fact]
    public void Updating_one_document_in_a_group_of_100k_entries_reads_one_page_and_the_path_to_the_root()
    {
        // A C# aggregate (sum) keeps this quick; what is counted is how much the tree reads.
        var tree = new ReduceTree("k", (_, values) => $$"""{"Count":{{values.Sum(v => JsonDocument.Parse(v).RootElement.GetProperty("Count").GetInt32())}}}""",
            pageSize: 1024, fanOut: 256);
        for (var i = 0; i < 100_000; i++) tree.Put($"d/{i}", ["""{"Count":1}"""]);
        tree.Reduce();
        tree.Put("d/5", ["""{"Count":3}"""]);
        Assert.Equal(100_002, JsonDocument.Parse(tree.Reduce()!).RootElement.GetProperty("Count").GetInt32());
        Assert.True(tree.LastReduceReads <= 1024 + 256 * (tree.Depth - 1), $"one update read {tree.LastReduceReads} values (depth {tree.Depth})");
    }

    [Fact]
    public void The_key_is_canonical_json_and_composite_keys_keep_their_properties()
    {
        var simple = ReduceScript.Compile(SumAndCount, ScriptLimits.Default);
        Assert.Equal("\"users/1\"", simple.KeyOf("""{"User":"users/1","Count":1,"Score":2}"""));
        var composite = ReduceScript.Compile("groupBy(x => ({ User: x.User, Day: x.Day })).aggregate(g => ({ User: g.key.User, Day: g.key.Day, Count: g.values.length }))", ScriptLimits.Default);
        var key = composite.KeyOf("""{"Day":"2024-01-02","User":"users/1","Count":1}""");
        Assert.Equal("""{"User":"users/1","Day":"2024-01-02"}""", key);
        var result = JsonDocument.Parse(composite.Aggregate(key, ["""{"Count":1}""", """{"Count":1}"""])).RootElement;
        Assert.Equal("2024-01-02", result.GetProperty("Day").GetString());
        Assert.Equal(2, result.GetProperty("Count").GetInt32());
    }

    [Theory]
    [InlineData("groupBy(x => x.User)", "reduce must be groupBy")]
    [InlineData("groupBy(x => x.User).aggregate(g => ({ A: 1 )", "reduce:")]
    [InlineData("groupBy('User').aggregate(g => ({}))", "groupBy needs a function")]
    public void A_malformed_reduce_is_refused_with_what_is_wrong(string reduce, string expected)
    {
        var e = Assert.Throws<ScriptSyntaxException>(() => ReduceScript.Compile(reduce, ScriptLimits.Default));
        Assert.Contains(expected, e.Message);
    }

    private static string Entry(int count, int score) => $$"""{"User":"users/1","Count":{{count}},"Score":{{score}}}""";
}
