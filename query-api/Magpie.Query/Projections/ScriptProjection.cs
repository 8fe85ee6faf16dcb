using Magpie.Contracts;
using System.Text.Json;
using Jint;
using Jint.Native;
using Magpie.Query.Rql;
using Magpie.Scripting;

namespace Magpie.Query.Projections;

/// <summary>
/// <c>select { … }</c>, RavenDB's JavaScript projection: the object literal evaluated for each result, with the document under
/// the query's alias, each <c>load … as x</c> under its name, the query's declared functions, <c>id(doc)</c> and
/// <c>load(id)</c>. It runs in the sandbox maps run in (<see cref="ScriptSandbox"/>: time, statements, memory and recursion
/// per result, frozen built-ins, no clock); a result whose script fails fails the query with the reason, as a 400.
/// </summary>
public sealed class ScriptProjection
{
    private readonly ScriptSandbox _sandbox;
    private readonly Prepared<Acornima.Ast.Script> _source;
    private readonly Lock _lock = new();
    private readonly int _maxDepth;
    private Func<string, JsonElement?>? _load;
    private JsValue? _function;
    private int _loaded;

    /// <summary>What makes two queries' projections the same script (the pool's key).</summary>
    public static string KeyOf(RqlQuery query) =>
        string.Join("\u0001", new[] { query.Alias, query.Script }.Concat(query.Functions).Concat(query.Loads.Select(l => l.Alias)));

    public ScriptProjection(RqlQuery query, ScriptLimits limits)
    {
        _maxDepth = limits.MaxJsonDepth;
        _sandbox = new ScriptSandbox(limits, deterministic: true);
        _sandbox.Define("id", IdOf, 1);
        _sandbox.Define("getMetadata", MetadataOf, 1);
        _sandbox.Define("load", args => Load(args.Length > 0 ? args[0] : JsValue.Undefined), 1);
        _sandbox.Seal();
        var parameters = string.Join(", ", new[] { query.Alias! }.Concat(query.Loads.Select(l => l.Alias)));
        // The declared functions live inside the projection's function, so it is made once and called per result: nothing of it
        // is a global the sandbox's per-run restore would take away.
        var text = $"(function ({parameters}) {{\n{string.Join("\n", query.Functions)}\nreturn ({query.Script}); }})";
        try { _source = ScriptSandbox.Prepare(text, "projection"); }
        catch (ScriptSyntaxException e) { throw new QueryProblem(ErrorKind.Invalid, $"the projection does not parse: {e.Message}"); }
    }

    /// <summary>The result for one document (with its metadata) and its loaded documents (null where missing).</summary>
    /// <param name="load">Reads a document by id for <c>load(id)</c> (null: none).</param>
    public JsonElement Project(JsonElement document, IReadOnlyList<JsonElement?> loaded, Func<string, JsonElement?> load)
    {
        lock (_lock)
        {
            _load = load;
            _loaded = loaded.Count;
            try
            {
                return _sandbox.Run(() =>
                {
                    var engine = _sandbox.Engine;
                    var function = _function ??= engine.Evaluate(_source);
                    var args = new[] { JsValueJson.ToJs(engine, document) }.Concat(loaded.Select(l => l is { } d ? JsValueJson.ToJs(engine, d) : JsValue.Null)).ToArray();
                    using var json = JsonDocument.Parse(JsValueJson.Serialize(engine, function.Call(JsValue.Undefined, args), _maxDepth));
                    return json.RootElement.Clone();
                });
            }
            catch (ScriptRunException e) { throw new QueryProblem(ErrorKind.Invalid, $"the projection failed on {IdOf(document)}: {e.Message}"); }
        }
    }

    /// <summary><c>id(doc)</c> in projections and updates: the document's <c>@metadata.@id</c>.</summary>
    public static JsValue IdOf(JsValue[] args) => args.Length > 0 && args[0] is Jint.Native.Object.ObjectInstance o
        && o.Get("@metadata") is Jint.Native.Object.ObjectInstance m ? m.Get("@id") : JsValue.Undefined;

    /// <summary><c>getMetadata(doc)</c>, as RavenDB's projections call it: the document's <c>@metadata</c> (<c>@id</c>, <c>@collection</c>, …).</summary>
    public static JsValue MetadataOf(JsValue[] args) => args.Length > 0 && args[0] is Jint.Native.Object.ObjectInstance o
        && o.Get("@metadata") is Jint.Native.Object.ObjectInstance m ? m : JsValue.Undefined;

    private JsValue Load(JsValue id)
    {
        if (!id.IsString()) return JsValue.Null;
        if (++_loaded > QueryLimits.MaxLoadedPerResult)
            throw new ScriptRunException($"a result loaded more than {QueryLimits.MaxLoadedPerResult} documents (the limit)");
        return _load!(id.AsString()) is { } d ? JsValueJson.ToJs(_sandbox.Engine, d) : JsValue.Null;
    }

    private static string IdOf(JsonElement d) =>
        d.TryGetProperty("@metadata", out var m) && m.TryGetProperty("@id", out var id) ? id.GetString() ?? "a result" : "a result";
}
