using System.Text.Json;
using Magpie.Indexer.Maps;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// The map results of a map/reduce index, per reduce key and source document, in one <see cref="ReduceTree"/>
/// per key. A document's change replaces what it contributed (to the keys it maps to now, and removes it from
/// keys it no longer maps to); <see cref="Flush"/> re-reduces only the keys a batch touched and says which
/// results changed and which keys are gone. Held in memory: a map/reduce index rebuilds it from the change
/// feed when it starts.
/// </summary>
public sealed class ReduceState(ReduceScript reduce, int pageSize = 1024, int fanOut = 256)
{
    private readonly Dictionary<string, ReduceTree> _trees = new(StringComparer.Ordinal);
    private readonly Dictionary<string, HashSet<string>> _keysOf = new(StringComparer.Ordinal);
    private readonly HashSet<string> _touched = new(StringComparer.Ordinal);

    public int Keys => _trees.Count;

    /// <summary>Document <paramref name="documentId"/> now maps to <paramref name="entries"/> (JSON; none = it contributes nothing). Throws <see cref="Scripting.ScriptRunException"/> for a key the reduce can't compute.</summary>
    public void Put(string documentId, IReadOnlyList<string> entries)
    {
        // Keys first: a throwing key function leaves the document's old contribution as it was.
        var byKey = entries.GroupBy(reduce.KeyOf, StringComparer.Ordinal).ToDictionary(g => g.Key, g => (IReadOnlyList<string>)g.ToList(), StringComparer.Ordinal);
        var before = _keysOf.GetValueOrDefault(documentId) ?? [];
        foreach (var gone in before.Where(k => !byKey.ContainsKey(k))) Tree(gone).Remove(documentId);
        foreach (var (key, values) in byKey) Tree(key).Put(documentId, values);
        if (byKey.Count == 0) _keysOf.Remove(documentId);
        else _keysOf[documentId] = byKey.Keys.ToHashSet(StringComparer.Ordinal);
    }

    public void Delete(string documentId) => Put(documentId, []);

    /// <summary>
    /// Re-reduces the keys touched since the last flush: the new results (key, JSON), the keys left without entries,
    /// and keys whose aggregate threw (no result until a later change reduces them again).
    /// </summary>
    public (List<(string Key, string Result)> Results, List<string> Gone, List<(string Key, string Error)> Failed) Flush()
    {
        var results = new List<(string, string)>();
        var gone = new List<string>();
        var failed = new List<(string, string)>();
        foreach (var key in _touched)
        {
            var tree = _trees[key];
            string? result;
            try { result = tree.Reduce(); }
            catch (Scripting.ScriptRunException e)
            {
                failed.Add((key, e.Message));
                gone.Add(key);
                continue;
            }
            if (result is not null) results.Add((key, result));
            else
            {
                gone.Add(key);
                _trees.Remove(key);
            }
        }
        _touched.Clear();
        return (results, gone, failed);
    }

    private ReduceTree Tree(string key)
    {
        _touched.Add(key);
        if (!_trees.TryGetValue(key, out var tree)) _trees[key] = tree = new ReduceTree(key, reduce.Aggregate, pageSize, fanOut);
        return tree;
    }

    /// <summary>A reduce result as an index entry (the same field rules as a map's entries).</summary>
    public static MappedEntry EntryOf(string resultJson)
    {
        using var d = JsonDocument.Parse(resultJson);
        return new MappedEntry(d.RootElement.EnumerateObject().Select(p => new KeyValuePair<string, object?>(p.Name, ValueOf(p.Value))).ToList());
    }

    private static object? ValueOf(JsonElement e) => e.ValueKind switch
    {
        JsonValueKind.String => e.GetString(),
        JsonValueKind.Number => e.GetDouble(),
        JsonValueKind.True => true,
        JsonValueKind.False => false,
        JsonValueKind.Array => e.EnumerateArray().Select(ValueOf).ToList(),
        JsonValueKind.Object => new NestedJson(e.GetRawText()),
        _ => null,
    };
}
