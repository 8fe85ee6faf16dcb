using System.Reflection;

namespace Magpie.Tests.Deploy;

/// <summary>
/// The stages talk through the contracts in common/ only: each can be run, replaced or split out without the others'
/// classes (the query side reaches indexes through IIndexDefinitions / ILocalShards / IShardSearcher, never the indexer).
/// </summary>
[Trait("Category", "Fast")]
public class StageBoundaryTests
{
    private static readonly string[] Stages = ["Magpie.Ingest", "Magpie.Indexer", "Magpie.Query", "Magpie.EtlSinks"];

    [Theory]
    [InlineData("Magpie.Ingest")]
    [InlineData("Magpie.Indexer")]
    [InlineData("Magpie.Query")]
    [InlineData("Magpie.EtlSinks")]
    public void A_stage_references_no_other_stage(string stage)
    {
        var referenced = Assembly.Load(stage).GetReferencedAssemblies().Select(a => a.Name!).ToList();
        Assert.Contains("Magpie.Contracts", referenced);
        Assert.Empty(referenced.Intersect(Stages.Where(s => s != stage)));
    }
}
