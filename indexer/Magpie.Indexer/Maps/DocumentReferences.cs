using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Engine;

namespace Magpie.Indexer.Maps;

/// <summary>
/// Which documents each indexed document's map loaded (<c>load(id)</c>), and the reverse: who loaded a document. When a loaded
/// document is written or deleted, the documents that loaded it are mapped again (RavenDB's LoadDocument references). Kept in
/// the index with the document, so they commit with its entries and a restart reloads them: on its first entry
/// (<see cref="EntryFields.Loads"/>, its loaded ids as a JSON array), or — a document whose maps gave no entry — as a state entry
/// (<see cref="Key"/>). Ids a map loaded that did not exist are kept too: the document appearing later maps its referrers again.
/// </summary>
public sealed class DocumentReferences
{
    /// <summary>The state entries' key (never a reduce key: those are JSON text).</summary>
    public const string Key = "@loads";

    private readonly Dictionary<string, string[]> _loadedBy = new(StringComparer.Ordinal);
    // Keyed case-insensitively: ids compare so (DocumentId.Fold), and a map may load a document spelling its id another way.
    private readonly Dictionary<string, HashSet<string>> _referrers = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>Documents whose loaded ids are kept as a state entry (they have no entry to carry them).</summary>
    private readonly HashSet<string> _inState = new(StringComparer.Ordinal);

    public void Load(StateEntry entry)
    {
        if (entry.Key != Key || entry.Values is null) return;
        Set(entry.Source, JsonSerializer.Deserialize<string[]>(entry.Values) ?? []);
        _inState.Add(entry.Source);
    }

    /// <summary>A document's loaded ids as its first entry kept them.</summary>
    public void Load(string source, string loadedJson) => Set(source, JsonSerializer.Deserialize<string[]>(loadedJson) ?? []);

    /// <summary>
    /// Records what <paramref name="source"/> loaded now and adds to the batch what keeps it: on its first entry when it has one
    /// (replacing a state entry it had), else a state entry (written when it changed or was not one); a document that loads nothing
    /// drops its state entry.
    /// </summary>
    public void Keep(string source, IReadOnlyCollection<string> loaded, List<IndexEntry> entries, List<IndexedDocument> documents, List<string> deletes)
    {
        var changed = Set(source, loaded);
        var inState = _inState.Contains(source);
        if (loaded.Count > 0 && entries.Count > 0)
        {
            entries[0] = new IndexEntry([.. entries[0].Fields, new StoredField(EntryFields.Loads, JsonSerializer.Serialize(_loadedBy[source]))]);
            if (inState) { deletes.Add(EntryIdOf(source)); _inState.Remove(source); }
        }
        else if (loaded.Count > 0)
        {
            if (changed || !inState) documents.Add(new StateEntry(Key, source, JsonSerializer.Serialize(_loadedBy[source])).ToDocument());
            _inState.Add(source);
        }
        else if (inState) { deletes.Add(EntryIdOf(source)); _inState.Remove(source); }
    }

    /// <summary>A document deleted: it loads nothing any more; its state entry, if it had one, goes too.</summary>
    public void Deleted(string source, List<string> deletes)
    {
        Set(source, []);
        if (_inState.Remove(source)) deletes.Add(EntryIdOf(source));
    }

    /// <summary>The documents that loaded <paramref name="id"/> (empty when none did).</summary>
    public IReadOnlyCollection<string> ReferrersOf(string id) => _referrers.TryGetValue(id, out var r) ? r : [];

    /// <summary>Records what <paramref name="source"/> loaded now (empty: nothing, or the document is gone); false when that is what it had.</summary>
    private bool Set(string source, IReadOnlyCollection<string> loaded)
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

    /// <summary>The id of a document's references entry (deleted when it loads nothing anymore).</summary>
    private static string EntryIdOf(string source) => StateEntry.IdOf(Key, source);
}
