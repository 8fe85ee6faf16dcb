using Acornima.Ast;
using Jint;
using Jint.Native;
using Jint.Native.Object;
using Magpie.Scripting;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// A reduce in RavenDB's JavaScript form, <c>groupBy(x => x.User).aggregate(g => ({ User: g.key, Count: … }))</c>:
/// the key of an entry and the aggregate of a group (<c>g.key</c>, <c>g.values</c>). Entries and results travel as
/// JSON text: the output has the map output's shape, so the same aggregate re-reduces partial results (what makes
/// a reduce tree possible). Parsed once; every call evaluates it afresh in a deterministic sandbox whose globals are
/// reset, so no call sees state another left.
/// </summary>
public sealed class ReduceScript
{
    private const string Builder = """
        function groupBy(key) {
          if (typeof key !== 'function') throw new TypeError('groupBy needs a function: groupBy(x => x.Key)');
          return { aggregate(fn) {
            if (typeof fn !== 'function') throw new TypeError('aggregate needs a function: aggregate(g => ({ … }))');
            return { key, aggregate: fn };
          } };
        }
        """;

    private readonly ScriptSandbox _sandbox;
    private readonly Prepared<Script> _source;
    private readonly int _maxDepth;

    private ReduceScript(ScriptLimits limits, Prepared<Script> source)
    {
        (_source, _maxDepth) = (source, limits.MaxJsonDepth);
        _sandbox = new ScriptSandbox(limits, deterministic: true);
        _sandbox.Engine.Execute(Builder);
        _sandbox.Seal();
    }

    /// <summary>Throws <see cref="ScriptSyntaxException"/> with the position of the problem.</summary>
    public static ReduceScript Compile(string reduce, ScriptLimits limits)
    {
        var script = new ReduceScript(limits, ScriptSandbox.Prepare(reduce, "reduce"));
        try { script._sandbox.Run(script.Functions); }
        catch (ScriptRunException e) { throw new ScriptSyntaxException($"reduce: {e.Message}", 1, 1); }
        return script;
    }

    /// <summary>The reduce's two functions, from a fresh evaluation of its text. Inside a sandbox run.</summary>
    private (JsValue Key, JsValue Aggregate) Functions()
    {
        var compiled = _sandbox.Engine.Evaluate(_source);
        if (compiled is ObjectInstance o && o.Get("key") is var key && key.IsCallable() && o.Get("aggregate") is var aggregate && aggregate.IsCallable()) return (key, aggregate);
        throw new ScriptRunException("reduce must be groupBy(x => x.Key).aggregate(g => ({ … }))");
    }

    /// <summary>The reduce key of one map entry, as canonical JSON text (a composite key keeps its properties' order). Throws <see cref="ScriptRunException"/>.</summary>
    public string KeyOf(string entryJson) => _sandbox.Run(() =>
    {
        var key = Functions().Key.Call(JsValue.Undefined, [Parse(entryJson)]);
        if (key.IsUndefined()) throw new ScriptRunException("groupBy returned undefined for an entry (a missing field?)");
        return JsValueJson.Serialize(_sandbox.Engine, key, _maxDepth);
    });

    /// <summary>Aggregates the entries (or partial results) of one key into one result, as JSON text. Throws <see cref="ScriptRunException"/>.</summary>
    public string Aggregate(string keyJson, IEnumerable<string> valuesJson) => _sandbox.Run(() =>
    {
        var aggregate = Functions().Aggregate;
        var g = JsObject.CreateFromEntries(_sandbox.Engine,
            [new("key", Parse(keyJson)), new("values", new JsArray(_sandbox.Engine, valuesJson.Select(Parse).ToArray()))]);
        var result = aggregate.Call(JsValue.Undefined, [g]);
        if (result is not ObjectInstance || result is JsArray || result.IsCallable()) throw new ScriptRunException("aggregate must return an object: g => ({ … })");
        return JsValueJson.Serialize(_sandbox.Engine, result, _maxDepth);
    });

    private JsValue Parse(string json)
    {
        using var d = System.Text.Json.JsonDocument.Parse(json);
        return JsValueJson.ToJs(_sandbox.Engine, d.RootElement);
    }
}
