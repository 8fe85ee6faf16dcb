using System.Text.Json;

namespace Magpie.Indexer.Indexing.Stages;

/// <summary>
/// What one source document now contributes to one reduce key: its map results there (JSON objects), or none
/// (it left the key, or was deleted). The unit the map stage hands to the reduce stage: in process (embedded), or
/// through the <c>magpie.mapped.&lt;index&gt;</c> topic keyed by <see cref="Key"/> (Kafka mode), so a key's changes
/// reach its one owner in order. Applying the same change twice leaves the same state.
/// </summary>
public sealed record MappedChange(string Key, string Source, IReadOnlyList<string> Values)
{
    public bool Removes => Values.Count == 0;

    /// <summary>The values as one JSON array (how state entries and mapped messages carry them).</summary>
    public string ValuesJson => $"[{string.Join(',', Values)}]";

    public static IReadOnlyList<string> ParseValues(string? json)
    {
        if (string.IsNullOrEmpty(json)) return [];
        using var d = JsonDocument.Parse(json);
        return d.RootElement.EnumerateArray().Select(v => v.GetRawText()).ToList();
    }
}
