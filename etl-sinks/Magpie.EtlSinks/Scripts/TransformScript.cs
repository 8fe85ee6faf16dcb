using System.Text.RegularExpressions;
using Jint.Native;
using Jint.Native.Json;
using Jint.Native.Object;
using Jint.Parser;
using Jint.Runtime.Interop;
using Magpie.Contracts.Changes;
using Magpie.Scripting;

namespace Magpie.EtlSinks.Scripts;

/// <summary>What one <c>loadTo…</c> call asked for: a body for a destination (exchange or topic), with optional routing key and CloudEvents attributes.</summary>
public sealed record LoadedMessage(string Destination, string? RoutingKey, string BodyJson, string? Type, string? Source, string? Id);

/// <summary>
/// A transform script in RavenDB's queue-ETL style, compiled once and run per change. For a put, the script
/// runs with <c>this</c> = the document; <c>id(this)</c> is its id; <c>loadTo&lt;Name&gt;(obj, routingKey?, attrs?)</c>
/// or <c>loadTo('name', obj, routingKey?, attrs?)</c> publishes <c>obj</c> (for Kafka the argument after
/// <c>obj</c> is <c>attrs</c>); returning without loading filters the document out. For a delete, the
/// script's <c>deleted(id, collection)</c> function runs if it declares one (it loads what it wants, or
/// nothing); otherwise <c>{ id, collection }</c> goes to every destination the script names, routing key
/// = the document id. ES5.1 (Jint 2).
/// </summary>
public sealed partial class TransformScript : IDisposable
{
    // The script becomes the body of a function, so `return` filters and function declarations (deleted) hoist.
    private const string Prologue = "function __magpie_transform(__magpie_op, __magpie_id, __magpie_collection) { "
        + "if (__magpie_op === 'delete') return typeof deleted === 'function' ? deleted(__magpie_id, __magpie_collection) : __magpie_deleted(__magpie_id, __magpie_collection);\n";
    private const int PrologueLines = 1;

    private readonly ScriptSandbox _sandbox;
    private readonly JsValue _transform;
    private readonly JsonParser _parser;
    private readonly List<LoadedMessage> _loaded = [];
    private ObjectInstance? _current;
    private string _currentId = "";

    private TransformScript(string script, ScriptLimits limits)
    {
        Destinations = NamedDestinations(script);
        _sandbox = new ScriptSandbox(limits);
        var engine = _sandbox.Engine;
        _parser = new JsonParser(engine);
        engine.SetValue("id", new ClrFunctionInstance(engine, (_, args) => IdOf(args.Length > 0 ? args[0] : JsValue.Undefined), 1));
        engine.SetValue("loadTo", new ClrFunctionInstance(engine, (_, args) =>
            Load(args.Length > 0 && args[0].IsString() ? args[0].AsString() : throw new ScriptRunException("loadTo(name, obj, …) needs the destination name first"), args.Skip(1).ToArray()), 4));
        foreach (var name in Destinations.Where(d => IdentifierPattern().IsMatch(d)))
            engine.SetValue("loadTo" + name, new ClrFunctionInstance(engine, (_, args) => Load(name, args), 3));
        engine.SetValue("__magpie_deleted", new ClrFunctionInstance(engine, (_, args) => DefaultDelete(args[0].AsString(), args[1].AsString()), 2));
        engine.Execute(Prologue + script + "\n}");
        _transform = engine.GetValue("__magpie_transform");
    }

    /// <summary>Exchanges / topics the script names literally (<c>loadToOrders(</c>, <c>loadTo('orders.x'</c>): declared up front, and where deletes go by default.</summary>
    public IReadOnlyList<string> Destinations { get; }

    /// <summary>Parses and prepares the script; a syntax error becomes a <see cref="ScriptSyntaxException"/>.</summary>
    public static TransformScript Compile(string script, ScriptLimits limits)
    {
        try { new JavaScriptParser().Parse(Prologue + script + "\n}"); }
        catch (ParserException e)
        {
            var line = Math.Max(1, e.LineNumber - PrologueLines);
            var lines = script.Split('\n').Length;
            // Past the user's last line means the wrapper's closing brace: the script ended too early.
            if (line > lines) throw new ScriptSyntaxException($"script does not parse: {e.Description} at the end of the script (an unclosed bracket or string?); scripts are ES5.1", lines, script.Split('\n')[^1].Length + 1);
            throw new ScriptSyntaxException($"script does not parse: {e.Description}; scripts are ES5.1", line, e.Column);
        }
        return new TransformScript(script, limits);
    }

    /// <summary>Runs the script for one change; what it loaded, in call order. Throws <see cref="ScriptRunException"/>.</summary>
    public IReadOnlyList<LoadedMessage> Run(ChangeEvent change)
    {
        _loaded.Clear();
        _currentId = change.Id;
        _sandbox.Run(() =>
        {
            if (change.Op == ChangeOp.Delete)
            {
                _current = null;
                return _transform.Invoke(JsValue.Null, ["delete", change.Id, change.Collection]);
            }
            var doc = JsValueJson.ToJs(_sandbox.Engine, _parser, change.Document!.Value);
            _current = doc.AsObject();
            return _transform.Invoke(doc, ["put", change.Id, change.Collection]);
        }, PrologueLines);
        return [.. _loaded];
    }

    private JsValue IdOf(JsValue value)
    {
        if (value.IsObject() && ReferenceEquals(value.AsObject(), _current)) return _currentId;
        if (value.IsObject() && value.AsObject().Get("@metadata") is { } meta && meta.IsObject() && meta.AsObject().Get("@id") is { } id && id.IsString()) return id;
        return JsValue.Undefined;
    }

    private JsValue Load(string destination, JsValue[] args)
    {
        if (args.Length == 0 || !args[0].IsObject()) throw new ScriptRunException($"loadTo{destination}(obj, …) needs an object to publish");
        var body = JsValueJson.Serialize(args[0]);
        string? routingKey = null;
        ObjectInstance? attributes = null;
        for (var i = 1; i < args.Length; i++)
        {
            if (args[i].IsString() && routingKey is null && attributes is null) routingKey = args[i].AsString();
            else if (args[i].IsObject()) attributes = args[i].AsObject();
        }
        _loaded.Add(new LoadedMessage(destination, routingKey, body,
            Attribute(attributes, "type"), Attribute(attributes, "source"), Attribute(attributes, "id")));
        return JsValue.Undefined;
    }

    private JsValue DefaultDelete(string id, string collection)
    {
        var body = System.Text.Json.JsonSerializer.Serialize(new { id, collection });
        foreach (var destination in Destinations) _loaded.Add(new LoadedMessage(destination, id, body, null, null, null));
        return JsValue.Undefined;
    }

    /// <summary>RavenDB spells the attributes <c>Type</c>/<c>Source</c>/<c>Id</c>; CloudEvents spells them lower case. Both work.</summary>
    private static string? Attribute(ObjectInstance? attributes, string name)
    {
        if (attributes is null) return null;
        foreach (var key in new[] { name, char.ToUpperInvariant(name[0]) + name[1..] })
            if (attributes.Get(key) is { } v && v.IsString()) return v.AsString();
        return null;
    }

    private static List<string> NamedDestinations(string script) =>
        LoadToNamePattern().Matches(script).Select(m => m.Groups[1].Value)
            .Concat(LoadToStringPattern().Matches(script).Select(m => m.Groups[2].Value))
            .Distinct(StringComparer.Ordinal).ToList();

    [GeneratedRegex(@"\bloadTo([A-Za-z_$][\w$]*)\s*\(")]
    private static partial Regex LoadToNamePattern();

    [GeneratedRegex(@"\bloadTo\s*\(\s*(['""])([^'""]+)\1")]
    private static partial Regex LoadToStringPattern();

    [GeneratedRegex(@"^[A-Za-z_$][\w$]*$")]
    private static partial Regex IdentifierPattern();

    public void Dispose() => _sandbox.Dispose();
}
