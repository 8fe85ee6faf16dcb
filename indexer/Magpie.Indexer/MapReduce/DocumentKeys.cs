using Magpie.Indexer.Indexing.Stages;
using Magpie.Indexer.Engine;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// The map side of a map/reduce index: which reduce keys each source document contributes to, so a change of the
/// document also tells the keys it left (the reduce side of another key may live in another process). Rebuilt
/// from the state entries the index committed.
/// </summary>
public sealed class DocumentKeys(ReduceScript keys)
{
    private readonly Dictionary<string, HashSet<string>> _keysOf = new(StringComparer.Ordinal);

    public int Documents => _keysOf.Count;

    public void Load(StateEntry entry)
    {
        if (!_keysOf.TryGetValue(entry.Source, out var set)) _keysOf[entry.Source] = set = new HashSet<string>(StringComparer.Ordinal);
        set.Add(entry.Key);
    }

    /// <summary>
    /// Document <paramref name="source"/> now maps to <paramref name="entries"/> (JSON; none: deleted or it maps to nothing):
    /// its changes per key, removals from keys it left included. Throws <see cref="Scripting.ScriptRunException"/> for an
    /// entry whose key can't be computed, leaving what the document contributed as it was.
    /// </summary>
    public List<MappedChange> Changes(string source, IReadOnlyList<string> entries)
    {
        var byKey = entries.GroupBy(keys.KeyOf, StringComparer.Ordinal).ToDictionary(g => g.Key, g => g.ToList(), StringComparer.Ordinal);
        var changes = new List<MappedChange>(byKey.Count + 1);
        if (_keysOf.TryGetValue(source, out var before))
            changes.AddRange(before.Where(k => !byKey.ContainsKey(k)).Select(k => new MappedChange(k, source, [])));
        changes.AddRange(byKey.Select(g => new MappedChange(g.Key, source, g.Value)));
        if (byKey.Count == 0) _keysOf.Remove(source);
        else _keysOf[source] = byKey.Keys.ToHashSet(StringComparer.Ordinal);
        return changes;
    }
}
