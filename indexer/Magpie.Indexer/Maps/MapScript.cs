using Jint.Native;
using Jint.Native.Json;
using Jint.Runtime.Interop;
using Magpie.Contracts.Changes;
using Magpie.Scripting;

namespace Magpie.Indexer.Maps;

/// <summary>One index entry as the map returned it: property name → value (string, double, bool, null, a list of those, or nested JSON text).</summary>
public sealed record MappedEntry(IReadOnlyList<KeyValuePair<string, object?>> Values);

/// <summary>
/// An index's maps, RavenDB style: each string calls <c>map('Collection', doc => ({ … }))</c> once; the
/// function returns an entry, an array of entries, or null/undefined for none. <c>id(doc)</c> is the document
/// id. Compiled once per definition (arrow functions rewritten to ES5 for Jint 2), run per document in
/// the shared sandbox.
/// </summary>
public sealed class MapScript : IDisposable
{
    private readonly ScriptSandbox _sandbox;
    private readonly JsonParser _parser;
    private readonly List<(string Collection, JsValue Map)> _maps = [];
    private string _currentId = "";
    private JsValue _current = JsValue.Undefined;

    private MapScript(ScriptLimits limits)
    {
        _sandbox = new ScriptSandbox(limits);
        _parser = new JsonParser(_sandbox.Engine);
    }

    /// <summary>The collections the maps cover (case-insensitive).</summary>
    public IReadOnlySet<string> Collections { get; private set; } = new HashSet<string>();

    /// <summary>Throws <see cref="ScriptSyntaxException"/> naming the map (1-based) and the position in it.</summary>
    public static MapScript Compile(IReadOnlyList<string> maps, ScriptLimits limits)
    {
        if (maps.Count == 0) throw new ScriptSyntaxException("an index needs at least one map: map('Collection', doc => ({ … }))", 1, 1);
        var script = new MapScript(limits);
        try
        {
            var engine = script._sandbox.Engine;
            var registered = new List<(JsValue Collection, JsValue Map)>();
            engine.SetValue("map", new ClrFunctionInstance(engine, (_, args) =>
            {
                registered.Add((args.Length > 0 ? args[0] : JsValue.Undefined, args.Length > 1 ? args[1] : JsValue.Undefined));
                return JsValue.Undefined;
            }, 2));
            engine.SetValue("id", new ClrFunctionInstance(engine, (_, args) =>
                args.Length > 0 && args[0].IsObject() && script._current.IsObject() && ReferenceEquals(args[0].AsObject(), script._current.AsObject())
                    ? script._currentId : JsValue.Undefined, 1));
            for (var i = 0; i < maps.Count; i++)
            {
                registered.Clear();
                string es5;
                try
                {
                    es5 = ArrowFunctions.ToEs5(maps[i]);
                    new Jint.Parser.JavaScriptParser().Parse(es5);
                }
                catch (ScriptSyntaxException e) { throw new ScriptSyntaxException($"maps[{i}]: {e.Message}", e.Line, e.Column); }
                catch (Jint.Parser.ParserException e) { throw new ScriptSyntaxException($"maps[{i}]: {e.Description} (scripts are ES5.1 plus arrow functions)", e.LineNumber, e.Column); }
                try { script._sandbox.Run(() => engine.Execute(es5), 0); }
                catch (ScriptRunException e) { throw new ScriptSyntaxException($"maps[{i}]: {e.Message}", 1, 1); }
                if (registered.Count != 1 || !registered[0].Collection.IsString() || !registered[0].Map.IsObject() || registered[0].Map.AsObject().Class != "Function")
                    throw new ScriptSyntaxException($"maps[{i}] must call map('Collection', doc => ({{ … }})) exactly once", 1, 1);
                script._maps.Add((registered[0].Collection.AsString(), registered[0].Map));
            }
            script.Collections = script._maps.Select(m => m.Collection).ToHashSet(StringComparer.OrdinalIgnoreCase);
            return script;
        }
        catch
        {
            script.Dispose();
            throw;
        }
    }

    /// <summary>The entries of one document (none if no map covers its collection). Throws <see cref="ScriptRunException"/>.</summary>
    public IReadOnlyList<MappedEntry> Run(ChangeEvent change)
    {
        var entries = new List<MappedEntry>();
        foreach (var value in Results(change)) Add(entries, value);
        return entries;
    }

    /// <summary>The entries of one document as JSON text (map/reduce: what the reduce reads). Throws <see cref="ScriptRunException"/>.</summary>
    public IReadOnlyList<string> RunJson(ChangeEvent change)
    {
        var entries = new List<string>();
        foreach (var value in Results(change))
        {
            if (value.IsNull() || value.IsUndefined()) continue;
            if (!value.IsObject() || value.IsArray()) throw new ScriptRunException("a map must return an object, an array of objects, or null");
            entries.Add(JsValueJson.Serialize(value));
        }
        return entries;
    }

    /// <summary>What the maps of the document's collection returned, arrays flattened.</summary>
    private IEnumerable<JsValue> Results(ChangeEvent change)
    {
        if (change.Document is not { } document) yield break;
        foreach (var (collection, map) in _maps)
        {
            if (!string.Equals(collection, change.Collection, StringComparison.OrdinalIgnoreCase)) continue;
            var result = _sandbox.Run(() =>
            {
                _currentId = change.Id;
                _current = JsValueJson.ToJs(_sandbox.Engine, _parser, document);
                return map.Invoke(_current);
            }, 0);
            if (result.IsArray())
            {
                var array = result.AsArray();
                var length = (uint)array.Get("length").AsNumber();
                for (uint i = 0; i < length; i++) yield return array.Get(i.ToString());
            }
            else yield return result;
        }
    }

    private static void Add(List<MappedEntry> entries, JsValue value)
    {
        if (value.IsNull() || value.IsUndefined()) return;
        if (!value.IsObject()) throw new ScriptRunException("a map must return an object, an array of objects, or null");
        var o = value.AsObject();
        var values = new List<KeyValuePair<string, object?>>();
        foreach (var (name, descriptor) in o.GetOwnProperties().ToList())
        {
            if (descriptor.Enumerable != true) continue;
            var v = o.Get(name);
            if (v.IsUndefined() || (v.IsObject() && v.AsObject().Class == "Function")) continue;
            values.Add(new(name, ToClr(v)));
        }
        entries.Add(new MappedEntry(values));
    }

    private static object? ToClr(JsValue v)
    {
        if (v.IsNull() || v.IsUndefined()) return null;
        if (v.IsString()) return v.AsString();
        if (v.IsNumber()) return v.AsNumber();
        if (v.IsBoolean()) return v.AsBoolean();
        if (v.IsArray())
        {
            var a = v.AsArray();
            var length = (uint)a.Get("length").AsNumber();
            var list = new List<object?>((int)length);
            for (uint i = 0; i < length; i++) list.Add(ToClr(a.Get(i.ToString())));
            return list;
        }
        return new NestedJson(JsValueJson.Serialize(v));
    }

    public void Dispose() => _sandbox.Dispose();
}

/// <summary>An object value inside an entry: indexed as its JSON text, as RavenDB does.</summary>
public sealed record NestedJson(string Json);
