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
    public static void Check(IndexDefinition definition, ScriptLimits limits) => Check(definition, limits, loads: true);

    /// <summary>Kafka mode's check: an indexer there has no document store to <c>load()</c> from.</summary>
    public static void CheckWithoutLoads(IndexDefinition definition, ScriptLimits limits) => Check(definition, limits, loads: false);

    private static void Check(IndexDefinition definition, ScriptLimits limits, bool loads)
    {
        var maps = MapScript.Compile(definition.Maps, limits);
        if (maps.Loads && !loads)
            throw new ScriptSyntaxException("load() reads the document store, which Kafka-mode indexers do not have yet: run this index embedded", 1, 1);
        if (definition.Reduce is not { } reduce) return;
        ReduceScript.Compile(reduce, limits);
        ReduceShape.Check(definition.Maps, reduce);
    }
}
