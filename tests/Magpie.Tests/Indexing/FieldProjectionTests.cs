using System.Text;
using System.Text.Json;
using CsCheck;
using Magpie.Contracts.Changes;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

namespace Magpie.Tests.Indexing;

/// <summary>
/// Maps that only copy fields skip the JS engine. That is only worth having if no document can tell: every generated
/// document (missing fields, nulls, nested objects, arrays of anything, huge numbers, duplicate keys, unicode) gets
/// exactly the entries, or exactly the error, the engine gives.
/// </summary>
[Trait("Category", "Fast")]
public sealed class FieldProjectionTests
{
    /// <summary>Shallow, and reaching into objects that are often missing or not objects (where the engine throws).</summary>
    public static TheoryData<string> Projections =>
    [
        "map('Posts', p => ({ Title: p.Title, Tags: p.Tags, Score: p.Score, Owner: p.Owner, Key: id(p) }))",
        "map('Posts', p => ({ Title: p.Title, Name: p.Owner.Name, City: p.Owner.Address.City, Key: id(p) }))",
        // An automatic index's map, as the query side writes it: read through arrays, [] flattening.
        $"map('Posts', function (d) {{ {Magpie.Contracts.Indexes.AutoMaps.Get}return {{ 'Title': get(d, 'Title'), 'Owner.Name': get(d, 'Owner.Name'), 'Tags[]': get(d, 'Tags[]'), 'Owner.Address.City': get(d, 'Owner.Address.City'), 'Tags[].Name': get(d, 'Tags[].Name') }}; }})",
    ];

    private static readonly string[] Keys = ["Title", "Tags", "Score", "Owner", "Name", "Address", "City", "length"];

    private static readonly string[] Literals = ["true", "false", "null", "1e400", "-1e400", "12345678901234567890123", "1.50", "-0", "0.1e-400"];

    private static readonly Gen<string> Scalar = Gen.OneOf(
        Gen.String[Gen.Char["aé€😀\"\\ \n"], 0, 6].Select(s => JsonSerializer.Serialize(s)),
        Gen.Int.Select(i => i.ToString()),
        Gen.Double.Select(d => double.IsFinite(d) ? d.ToString("R") : "0"),
        Gen.Int[0, Literals.Length - 1].Select(i => Literals[i]));

    private static Gen<string> Value(int depth) => depth == 0 ? Scalar : Gen.Frequency(
        (3, Scalar),
        (1, Value(depth - 1).Array[0, 4].Select(items => "[" + string.Join(",", items) + "]")),
        (3, Object(depth - 1)));

    private static Gen<string> Object(int depth) =>
        Gen.Select(Gen.Int[0, Keys.Length - 1], Value(depth)).Array[0, 6]
            .Select(props => "{" + string.Join(",", props.Select(p => JsonSerializer.Serialize(Keys[p.Item1]) + ":" + p.Item2)) + "}");

    [Theory, MemberData(nameof(Projections))]
    public void A_field_copying_map_gives_what_the_engine_gives_for_any_document(string projection)
    {
        var direct = MapScript.Compile([projection], ScriptLimits.Default);
        var engine = MapScript.Compile([projection], ScriptLimits.Default, fieldProjections: false);
        var entries = 0;
        Assert.Equal([true], direct.Projections);
        Assert.Equal([false], engine.Projections);
        Object(3).Sample(json =>
        {
            var change = new ChangeEvent("posts/1", "Posts", 1, ChangeOp.Put, DateTimeOffset.UnixEpoch, JsonDocument.Parse(json).RootElement);
            var expected = Outcome(engine, change);
            Assert.Equal(expected, Outcome(direct, change));
            if (!expected.Contains("Exception")) entries++;
        }, iter: 10_000, threads: 1);   // one MapScript is one engine: not shared across threads
        Assert.True(entries > 300, $"only {entries} of 10,000 documents mapped without an error: the comparison says little");
    }

    [Fact]
    public void Only_maps_that_copy_fields_are_read_without_the_engine()
    {
        string[] projections =
        [
            "map('Posts', p => ({ Title: p.Title }))",
            "map('Posts', (doc) => ({ A: doc.x.y.z, B: id(doc) }))",
            "map('Posts', p => ({}))",
        ];
        string[] engineOnly =
        [
            "map('Posts', p => ({ Title: p.Title.toUpperCase() }))",
            "map('Posts', p => ({ 1: p.Title }))",                 // numeric keys are reordered by the engine
            "map('Posts', p => ({ C: p.constructor }))",           // inherited from Object.prototype
            "map('Posts', p => ({ T: p['Title'] }))",
            "map('Posts', p => ({ T: p?.Title }))",
            "map('Posts', p => ({ T: p.Title, T: p.Body }))",
            "map('Posts', p => ({ ...p }))",
            "map('Posts', function (p) { return { T: p.Title }; })",
            "var x = 1; map('Posts', p => ({ T: p.Title }))",
            "map('Posts', async p => ({ T: p.Title }))",
            "map('Posts', p => ({ T: id(p), U: q.Title }))",
        ];
        foreach (var source in projections) Assert.Equal([true], MapScript.Compile([source], ScriptLimits.Default).Projections);
        foreach (var source in engineOnly)
        {
            MapScript compiled;
            try { compiled = MapScript.Compile([source], ScriptLimits.Default); }
            catch (ScriptSyntaxException) { continue; }   // refused outright (async, unknown globals): the engine's call too
            Assert.Equal([false], compiled.Projections);
        }
    }

    /// <summary>The entries as comparable text, or the error the map ended with.</summary>
    private static string Outcome(MapScript maps, ChangeEvent change)
    {
        try
        {
            var text = new StringBuilder();
            foreach (var entry in maps.Run(change))
            {
                foreach (var (key, value) in entry.Values) text.Append(key).Append('=').Append(Show(value)).Append(';');
                text.Append('\n');
            }
            return text.ToString();
        }
        catch (Exception e) { return $"{e.GetType().Name}: {e.Message}"; }
    }

    private static string Show(object? value) => value switch
    {
        null => "null",
        string s => JsonSerializer.Serialize(s),
        double d => "d:" + d.ToString("R"),
        // An integer past 2^53 is kept exactly where the engine holds its double: the same number, to the engine's precision.
        long l => "d:" + ((double)l).ToString("R"),
        bool b => b ? "true" : "false",
        List<object?> list => "[" + string.Join(",", list.Select(Show)) + "]",
        NestedJson n => "json:" + n.Json,
        _ => $"{value.GetType().Name}:{value}",
    };
}
