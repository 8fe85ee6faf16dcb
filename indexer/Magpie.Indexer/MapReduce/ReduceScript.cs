using Jint.Native;
using Jint.Native.Json;
using Magpie.Scripting;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// A reduce in RavenDB's JavaScript form, <c>groupBy(x => x.User).aggregate(g => ({ User: g.key, Count: … }))</c>,
/// compiled once into its two functions: the key of an entry and the aggregate of a group (<c>g.key</c>,
/// <c>g.values</c>). Entries and results travel as JSON text: the output has the map output's shape, so the
/// same aggregate re-reduces partial results (what makes a reduce tree possible). Runs in the shared sandbox.
/// </summary>
public sealed class ReduceScript : IDisposable
{
    private readonly ScriptSandbox _sandbox;
    private readonly JsonParser _parser;
    private JsValue _key = JsValue.Undefined, _aggregate = JsValue.Undefined;

    private ReduceScript(ScriptLimits limits)
    {
        _sandbox = new ScriptSandbox(limits);
        _parser = new JsonParser(_sandbox.Engine);
    }

    /// <summary>Throws <see cref="ScriptSyntaxException"/> with the position of the problem.</summary>
    public static ReduceScript Compile(string reduce, ScriptLimits limits)
    {
        var script = new ReduceScript(limits);
        try
        {
            var engine = script._sandbox.Engine;
            string es5;
            try
            {
                es5 = ArrowFunctions.ToEs5(reduce);
                new Jint.Parser.JavaScriptParser().Parse(es5);
            }
            catch (ScriptSyntaxException e) { throw new ScriptSyntaxException($"reduce: {e.Message}", e.Line, e.Column); }
            catch (Jint.Parser.ParserException e) { throw new ScriptSyntaxException($"reduce: {e.Description} (scripts are ES5.1 plus arrow functions)", e.LineNumber, e.Column); }
            engine.Execute("""
                function groupBy(key) {
                  if (typeof key !== 'function') throw new TypeError('groupBy needs a function: groupBy(x => x.Key)');
                  return { aggregate: function (fn) {
                    if (typeof fn !== 'function') throw new TypeError('aggregate needs a function: aggregate(g => ({ … }))');
                    return { '@key': key, '@aggregate': fn };
                  } };
                }
                """);
            JsValue compiled;
            try { compiled = script._sandbox.Run(() => engine.Execute(es5).GetCompletionValue(), 0); }
            catch (ScriptRunException e) { throw new ScriptSyntaxException($"reduce: {e.Message}", 1, 1); }
            if (!compiled.IsObject() || compiled.AsObject().Get("@key") is not { } key || !key.IsObject() || compiled.AsObject().Get("@aggregate") is not { } aggregate || !aggregate.IsObject())
                throw new ScriptSyntaxException("reduce must be groupBy(x => x.Key).aggregate(g => ({ … }))", 1, 1);
            (script._key, script._aggregate) = (key, aggregate);
            return script;
        }
        catch
        {
            script.Dispose();
            throw;
        }
    }

    /// <summary>The reduce key of one map entry, as canonical JSON text (a composite key keeps its properties' order). Throws <see cref="ScriptRunException"/>.</summary>
    public string KeyOf(string entryJson) => _sandbox.Run(() =>
    {
        var key = _key.Invoke(Parse(entryJson));
        if (key.IsUndefined()) throw new ScriptRunException("groupBy returned undefined for an entry (a missing field?)");
        return JsValueJson.Serialize(key);
    }, 0);

    /// <summary>Aggregates the entries (or partial results) of one key into one result, as JSON text. Throws <see cref="ScriptRunException"/>.</summary>
    public string Aggregate(string keyJson, IEnumerable<string> valuesJson) => _sandbox.Run(() =>
    {
        var g = _sandbox.Engine.Object.Construct(Jint.Runtime.Arguments.Empty);
        g.FastAddProperty("key", Parse(keyJson), true, true, true);
        g.FastAddProperty("values", _parser.CreateArrayInstance(valuesJson.Select(Parse).ToList()), true, true, true);
        var result = _aggregate.Invoke(g);
        if (!result.IsObject() || result.IsArray()) throw new ScriptRunException("aggregate must return an object: g => ({ … })");
        return JsValueJson.Serialize(result);
    }, 0);

    private JsValue Parse(string json)
    {
        using var d = System.Text.Json.JsonDocument.Parse(json);
        return JsValueJson.ToJs(_sandbox.Engine, _parser, d.RootElement);
    }

    public void Dispose() => _sandbox.Dispose();
}
