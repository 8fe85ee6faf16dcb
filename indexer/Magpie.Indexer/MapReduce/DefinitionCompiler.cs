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
    public static void Check(IndexDefinition definition, ScriptLimits limits) => Check(definition, limits, kafka: false);

    /// <summary>
    /// Kafka mode's check: a map/reduce index's maps may not <c>load()</c> there. Its map side keeps its record of each document in
    /// the mapped topic (taken over from it when a partition moves), and that record does not carry what documents loaded.
    /// </summary>
    public static void CheckForKafka(IndexDefinition definition, ScriptLimits limits) => Check(definition, limits, kafka: true);

    /// <summary>Whether the definition's maps call <c>load()</c> (its shards then follow the changes of every partition).</summary>
    public static bool Loads(IndexDefinition definition, ScriptLimits limits) => MapScript.Compile(definition.Maps, limits).Loads;

    private static void Check(IndexDefinition definition, ScriptLimits limits, bool kafka)
    {
        var maps = MapScript.Compile(definition.Maps, limits);
        if (maps.Loads && kafka && definition.Reduce is not null)
            throw new ScriptSyntaxException("load() in a map/reduce index runs embedded only: with Kafka indexers, load() works in map indexes (denormalize there) but not yet in map/reduce maps", 1, 1);
        if (definition.Reduce is not { } reduce) return;
        ReduceScript.Compile(reduce, limits);
        ReduceShape.Check(definition.Maps, reduce);
    }
}
