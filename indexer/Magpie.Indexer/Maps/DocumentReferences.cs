using System.Text.Json;
using Magpie.Indexer.Engine;

namespace Magpie.Indexer.Maps;

/// <summary>
/// Which documents each indexed document's map loaded (<c>load(id)</c>), and the reverse: who loaded a document. When a loaded
/// document is written or deleted, the documents that loaded it are mapped again (RavenDB's LoadDocument references). Kept in
/// the index as state entries (<see cref="Key"/>, one per referring document, its loaded ids as a JSON array), written with the
/// batch that mapped the document, so they commit with its entries and a restart reloads them (<see cref="Load"/>).
/// Ids a map loaded that did not exist are kept too: the document appearing later maps its referrers again.
/// </summary>
public sealed class DocumentReferences
{
    /// <summary>The state entries' key (never a reduce key: those are JSON text).</summary>
    public const string Key = "@loads";

    private readonly Dictionary<string, string[]> _loadedBy = new(StringComparer.Ordinal);
    private readonly Dictionary<string, HashSet<string>> _referrers = new(StringComparer.Ordinal);

    /// <summary>Documents that loaded something.</summary>
    public int Count => _loadedBy.Count;

    public void Load(StateEntry entry)
    {
        if (entry.Key != Key || entry.Values is null) return;
        Set(entry.Source, JsonSerializer.Deserialize<string[]>(entry.Values) ?? []);
    }

    /// <summary>The documents that loaded <paramref name="id"/> (empty when none did).</summary>
    public IReadOnlyCollection<string> ReferrersOf(string id) => _referrers.TryGetValue(id, out var r) ? r : [];

    /// <summary>
    /// Records what <paramref name="source"/> loaded now (empty: nothing, or the document is gone); false when that is what it had.
    /// The caller then writes <see cref="EntryOf"/> (or deletes <see cref="EntryIdOf"/> when it loads nothing now).
    /// </summary>
    public bool Set(string source, IReadOnlyCollection<string> loaded)
    {
        var had = _loadedBy.TryGetValue(source, out var before) ? before : [];
        if (had.Length == loaded.Count && had.All(loaded.Contains)) return false;
        foreach (var target in had)
            if (_referrers.TryGetValue(target, out var r) && r.Remove(source) && r.Count == 0) _referrers.Remove(target);
        if (loaded.Count == 0) _loadedBy.Remove(source);
        else
        {
            _loadedBy[source] = [.. loaded];
            foreach (var target in loaded)
            {
                if (!_referrers.TryGetValue(target, out var r)) _referrers[target] = r = new HashSet<string>(StringComparer.Ordinal);
                r.Add(source);
            }
        }
        return true;
    }

    /// <summary>The state entry of what <paramref name="source"/> loads; null when it loads nothing (its entry is deleted).</summary>
    public IndexedDocument? EntryOf(string source) =>
        _loadedBy.TryGetValue(source, out var loaded) ? new StateEntry(Key, source, JsonSerializer.Serialize(loaded)).ToDocument() : null;

    /// <summary>The id of a document's references entry (deleted when it loads nothing anymore).</summary>
    public static string EntryIdOf(string source) => StateEntry.IdOf(Key, source);
}
