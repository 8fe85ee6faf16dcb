using System.Text;
using System.Text.Json;
using Magpie.Ingest.Documents;

namespace Magpie.Tests.Documents;

/// <summary>
/// The document limits hold while a JSON Patch applies, not only on its result: an operation that would take the document past
/// the size or depth limit fails the patch before it runs, with little memory spent, and a patch that stays within them applies.
/// </summary>
[Trait("Category", "Fast")]
public class PatchBudgetTests
{
    private const int Limit = 1024 * 1024;

    private static byte[] Utf8(string s) => Encoding.UTF8.GetBytes(s);

    private static Microsoft.AspNetCore.JsonPatch.SystemTextJson.JsonPatchDocument Patch(string json) =>
        DocumentPatcher.Parse(Utf8(json), out var error) ?? throw new InvalidOperationException(error);

    private static string Repeat(string operation, int times) => "[" + string.Join(",", Enumerable.Repeat(operation, times)) + "]";

    private static string Bomb() => "{\"E\":[" + string.Join(",", Enumerable.Range(0, 1000).Select(i => $"\"s{i}\"")) + "]}";

    private static DocumentPatchException Refused(string document, string patch, int maxBytes = Limit)
    {
        var before = GC.GetAllocatedBytesForCurrentThread();
        var e = Assert.Throws<DocumentPatchException>(() => DocumentPatcher.Apply(Utf8(document), Patch(patch), DocumentJson.DefaultMaxDepth, maxBytes));
        Assert.True(e.BreaksLimits, e.Message);
        // Refused before the document could grow: far less than the doubling would have taken (40 doublings of 10 KB: 10 PB).
        var allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        Assert.True(allocated < 64L * maxBytes, $"{allocated:N0} bytes allocated");
        return e;
    }

    [Theory]
    [InlineData("""{"op":"copy","from":"/E","path":"/E/-"}""")]     // the probe's: doubles the array each time
    [InlineData("""{"op":"copy","from":"/E","path":"/F"}""")]       // overwrites the same member: never grows past twice
    public void Copies_that_grow_the_document_past_its_limit_are_refused_before_they_run(string copy)
    {
        if (copy.Contains("/F"))
        {
            // Writing the same member over and over keeps the document at twice its size: it applies.
            var result = DocumentPatcher.Apply(Utf8(Bomb()), Patch(Repeat(copy, 40)), DocumentJson.DefaultMaxDepth, Limit);
            Assert.Equal(1000, JsonDocument.Parse(result).RootElement.GetProperty("F").GetArrayLength());
            return;
        }
        var e = Refused(Bomb(), Repeat(copy, 40));
        Assert.Contains($"past the limit of {Limit} bytes", e.Message);
        Assert.Contains("'copy' to '/E/-'", e.Message);
    }

    [Fact]
    public void Nested_copies_and_adds_that_grow_the_document_are_refused()
    {
        // An array copied into itself: size doubles, depth grows by one each time.
        Assert.Contains("past the limit", Refused("""{"a":[[1,2,3,4,5,6,7,8,9,10]]}""", Repeat("""{"op":"copy","from":"/a","path":"/a/-"}""", 40)).Message);
        // An object copied into its own member: one level deeper each time, until the depth limit.
        Assert.Contains("deeper than the limit", Refused("""{"a":{"b":1}}""", Repeat("""{"op":"copy","from":"/a","path":"/a/a"}""", 70)).Message);
        // Many adds of a value the patch brings, each inside the body limit, together past the document limit.
        var big = new string('x', 100_000);
        Assert.Contains("past the limit", Refused("{}", Repeat($$"""{"op":"add","path":"/x/-","value":"{{big}}"}""", 11).Replace("[{", """[{"op":"add","path":"/x","value":[]},{""")).Message);
    }

    [Fact]
    public void Copies_and_moves_that_would_nest_past_the_depth_limit_are_refused()
    {
        var deep = "{\"a\":" + string.Concat(Enumerable.Repeat("{\"b\":", 30)) + "1" + new string('}', 31);
        var path = "/z" + string.Concat(Enumerable.Repeat("/z", 39));
        var nest = "{\"op\":\"add\",\"path\":\"/z\",\"value\":" + string.Concat(Enumerable.Repeat("{\"z\":", 39)) + "{}" + new string('}', 39) + "}";
        var copy = Refused(deep, $$"""[{{nest}},{"op":"copy","from":"/a","path":"{{path}}/c"}]""");
        Assert.Contains("deeper than the limit of 64", copy.Message);
        var move = Refused(deep, $$"""[{{nest}},{"op":"move","from":"/a","path":"{{path}}/c"}]""");
        Assert.Contains("deeper than the limit of 64", move.Message);
    }

    [Fact]
    public void A_patch_that_removes_as_much_as_it_adds_applies_near_the_limit()
    {
        // 600 KB replaced three times under a 1 MB limit: the running bound crosses the limit, the exact size does not.
        var first = new string('a', 600_000);
        var document = $$"""{"big":"{{first}}","keep":1.50}""";
        var patch = "[" + string.Join(",", "bcd".Select(c => $$"""{"op":"replace","path":"/big","value":"{{new string(c, 600_000)}}"}""")) + "]";
        var result = JsonDocument.Parse(DocumentPatcher.Apply(Utf8(document), Patch(patch), DocumentJson.DefaultMaxDepth, Limit)).RootElement;
        Assert.Equal(new string('d', 600_000), result.GetProperty("big").GetString());
        Assert.Equal("1.50", result.GetProperty("keep").GetRawText());
    }

    [Fact]
    public void A_patch_of_more_operations_than_the_limit_is_refused()
    {
        var e = Refused("""{"n":0}""", Repeat("""{"op":"test","path":"/n","value":0}""", DocumentPatcher.MaxOperations + 1));
        Assert.Contains($"at most {DocumentPatcher.MaxOperations} operations", e.Message);
        // The limit itself applies.
        DocumentPatcher.Apply(Utf8("""{"n":0}"""), Patch(Repeat("""{"op":"test","path":"/n","value":0}""", DocumentPatcher.MaxOperations)), DocumentJson.DefaultMaxDepth, Limit);
    }
}
