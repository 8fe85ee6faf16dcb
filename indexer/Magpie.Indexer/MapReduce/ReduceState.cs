using Magpie.Indexer.Indexing.Stages;
using System.Text.Json;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Maps;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// The reduce side of a map/reduce index: the map results per reduce key and source document, one
/// <see cref="ReduceTree"/> per key. <see cref="Apply"/> replaces what a document contributes to a key;
/// <see cref="Flush"/> re-reduces only the keys touched since the last flush and returns the new results, the keys
/// that are gone, and the state entries to write beside them (so the state commits with the results and the
/// position, and a restart reloads it with <see cref="Load"/> instead of replaying the feed).
/// </summary>
public sealed class ReduceState(ReduceScript reduce, int pageSize = 1024, int fanOut = 256)
{
    private readonly Dictionary<string, ReduceTree> _trees = new(StringComparer.Ordinal);
    private readonly HashSet<string> _touched = new(StringComparer.Ordinal);
    private readonly Dictionary<string, StateEntry?> _stateWrites = new(StringComparer.Ordinal);

    public int Keys => _trees.Count;

    /// <summary>A committed state entry, read back when the index opens (results are already in the index).</summary>
    public void Load(StateEntry entry)
    {
        var tree = Tree(entry.Key);
        tree.Put(entry.Source, MappedChange.ParseValues(entry.Values));
        _touched.Remove(entry.Key);
    }

    /// <summary>After loading: reduces every key once, so later updates re-reduce only their path (results are not returned: the index has them).</summary>
    public void Loaded()
    {
        foreach (var tree in _trees.Values)
            try { tree.Reduce(); }
            catch (Scripting.ScriptRunException) { }   // the key's failure was recorded when it happened; its next change retries
    }

    /// <summary>Every key's current result (keys whose aggregate throws are left out): what an output collection holds.</summary>
    public List<(string Key, string Result)> Results()
    {
        var results = new List<(string, string)>(_trees.Count);
        foreach (var (key, tree) in _trees)
            try { if (tree.Reduce() is { } result) results.Add((key, result)); }
            catch (Scripting.ScriptRunException) { }
        return results;
    }

    public void Apply(MappedChange change)
    {
        var id = StateEntry.IdOf(change.Key, change.Source);
        if (change.Removes)
        {
            if (!_trees.ContainsKey(change.Key)) return;
            Tree(change.Key).Remove(change.Source);
            _stateWrites[id] = null;
        }
        else
        {
            Tree(change.Key).Put(change.Source, change.Values);
            _stateWrites[id] = new StateEntry(change.Key, change.Source, change.ValuesJson);
        }
    }

    /// <summary>
    /// Re-reduces the keys touched since the last flush: the new results (key, JSON), the keys left without entries,
    /// keys whose aggregate threw (no result until a later change reduces them again), and the state entries to
    /// write (null: delete that entry id).
    /// </summary>
    public ReduceFlush Flush()
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
        var state = _stateWrites.ToList();
        _stateWrites.Clear();
        return new ReduceFlush(results, gone, failed, state);
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

/// <summary>What a <see cref="ReduceState.Flush"/> produced: results to write, keys gone, keys that failed, state entries (id → entry, null = delete).</summary>
public sealed record ReduceFlush(List<(string Key, string Result)> Results, List<string> Gone, List<(string Key, string Error)> Failed,
    List<KeyValuePair<string, StateEntry?>> State);
