using Magpie.Contracts.Indexes;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// What a definition's scripts must be before it is kept: maps that compile, and a reduce that compiles and returns every map
/// field. Handed to the definition store by the indexer's wiring, so the store (which only keeps definitions) does not depend
/// on the scripts' runtime.
/// </summary>
public static class DefinitionCompiler
{
    /// <summary>Throws <see cref="ScriptSyntaxException"/> with the position of the first problem.</summary>
    public static void Check(IndexDefinition definition, ScriptLimits limits)
    {
        MapScript.Compile(definition.Maps, limits);
        if (definition.Reduce is not { } reduce) return;
        ReduceScript.Compile(reduce, limits);
        ReduceShape.Check(definition.Maps, reduce);
    }

    /// <summary>Whether the definition's maps call <c>load()</c> (in Kafka mode its shards then follow the changes of every partition).</summary>
    public static bool Loads(IndexDefinition definition, ScriptLimits limits) => MapScript.Compile(definition.Maps, limits).Loads;
}
