using Magpie.Contracts;
using System.Text.RegularExpressions;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

namespace Magpie.Indexer.Definitions;

/// <summary>
/// The PUT-time rules for <c>outputReduceToCollection</c>: only a map/reduce index has one; the name is a plain
/// collection name; no two indexes write the same collection; and no loop — an index must not read, directly or
/// through other indexes' output collections, the collection it writes (its own writes would feed it forever).
/// </summary>
public static partial class OutputCollections
{
    public static void Check(string name, IndexDefinition definition, IReadOnlyDictionary<string, IndexDefinition> others, ScriptLimits limits)
    {
        var output = definition.OutputReduceToCollection!;
        if (definition.Reduce is null) throw new IndexDefinitionException(ErrorKind.Invalid, "outputReduceToCollection needs a reduce: only map/reduce results are written back");
        if (!CollectionPattern().IsMatch(output))
            throw new IndexDefinitionException(ErrorKind.Invalid, $"outputReduceToCollection '{output}' is not a valid collection name: 1-100 letters, digits, '.', '_' or '-'");
        var rivals = others.Where(o => o.Key != name && string.Equals(o.Value.OutputReduceToCollection, output, StringComparison.OrdinalIgnoreCase)).Select(o => o.Key).ToList();
        if (rivals.Count > 0) throw new IndexDefinitionException(ErrorKind.Conflict, $"index '{rivals[0]}' already writes its results to collection '{output}'");

        // Who reads what: this definition as it would be, the others as they are.
        var graph = others.Where(o => o.Key != name).Select(o => (Name: o.Key, o.Value)).Append((Name: name, Value: definition))
            .Select(i => (i.Name, Reads: CollectionsOf(i.Value, limits), Writes: i.Value.OutputReduceToCollection)).ToList();
        var reads = graph.Single(g => g.Name == name).Reads;
        // Follow the writes from this index's output: any index reading a written collection writes its own output next.
        var path = new List<string> { name };
        var seen = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        var frontier = new Queue<(string Collection, List<string> Path)>([(output, path)]);
        while (frontier.TryDequeue(out var at))
        {
            if (!seen.Add(at.Collection)) continue;
            if (MapScript.Covering(reads, at.Collection))
                throw new IndexDefinitionException(ErrorKind.Invalid, $"outputReduceToCollection '{output}' makes a loop: {string.Join(" → ", at.Path.Select(p => $"'{p}'"))} writes collection '{at.Collection}', which '{name}' reads");
            foreach (var reader in graph.Where(g => g.Name != name && g.Writes is not null && MapScript.Covering(g.Reads, at.Collection)))
                frontier.Enqueue((reader.Writes!, [.. at.Path, reader.Name]));
        }
    }

    private static HashSet<string> CollectionsOf(IndexDefinition definition, ScriptLimits limits)
    {
        var maps = MapScript.Compile(definition.Maps, limits);
        return new HashSet<string>(maps.Collections, StringComparer.OrdinalIgnoreCase);
    }

    [GeneratedRegex("^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]
    private static partial Regex CollectionPattern();
}
