using System.Text.Json;

namespace Magpie.Ingest.Documents;

/// <summary>
/// Pairs a FasterKV checkpoint with what it reflects: every change-log entry before
/// <see cref="ReplayFrom"/> is in it, nothing after. Written atomically after the checkpoint completes;
/// recovery loads exactly this checkpoint and replays the log from <see cref="ReplayFrom"/>.
/// </summary>
internal sealed record StoreState(Guid CheckpointToken, long ReplayFrom, long LastEtag, List<CollectionState> Collections,
    Dictionary<string, SourcePositionState>? Sources = null, Dictionary<string, string[]>? Ledgers = null)
{
    /// <summary>The checkpoint's id index keys ids case-insensitively (false in a state written before: its index is rebuilt from the log).</summary>
    public bool FoldedIds { get; init; }

    private const string FileName = "store-state.json";

    public static StoreState? Load(string dir)
    {
        var path = Path.Combine(dir, FileName);
        return File.Exists(path) ? JsonSerializer.Deserialize<StoreState>(File.ReadAllBytes(path)) : null;
    }

    public void Save(string dir)
    {
        var path = Path.Combine(dir, FileName);
        var tmp = path + ".tmp";
        using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write, FileShare.None, 4096, FileOptions.WriteThrough))
        {
            JsonSerializer.Serialize(f, this);
            f.Flush(flushToDisk: true);
        }
        File.Move(tmp, path, overwrite: true);
    }
}

internal sealed record SourcePositionState(long Next, long[] Rejected);
