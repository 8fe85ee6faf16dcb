using Magpie.Scripting;

namespace Magpie.Indexer;

public sealed class IndexerOptions
{
    public required string DataDir { get; init; }
    public ScriptLimits ScriptLimits { get; init; } = ScriptLimits.Default;

    /// <summary>Changes per Lucene writer batch (one commit each).</summary>
    public int BatchSize { get; init; } = 4096;
    public int LuceneHeapMegabytes { get; init; } = 1024;
}
