using System.Text.RegularExpressions;
using Acornima.Ast;
using Jint;
using Jint.Native;
using Jint.Native.Object;
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
/// = the document id. Modern JavaScript (Jint 4). Each change runs the script's top level afresh in a sandbox whose
/// globals are reset, so no change sees what another left; unlike index maps, transforms may read the clock and
/// <c>Math.random()</c>.
/// </summary>
public sealed partial class TransformScript
{
    // The script becomes the body of a function, so `return` filters and function declarations (deleted) hoist.
    private const string Prologue = "function __magpie_transform(__magpie_op, __magpie_id, __magpie_collection) { "
        + "if (__magpie_op === 'delete') return typeof deleted === 'function' ? deleted(__magpie_id, __magpie_collection) : __magpie_deleted(__magpie_id, __magpie_collection);\n";
    private const int PrologueLines = 1;

    private readonly ScriptSandbox _sandbox;
    private readonly Prepared<Script> _source;
    private readonly int _maxDepth;
    private readonly List<LoadedMessage> _loaded = [];
    private ObjectInstance? _current;
    private string _currentId = "";

    private TransformScript(string script, Prepared<Script> source, ScriptLimits limits)
    {
        (_source, _maxDepth) = (source, limits.MaxJsonDepth);
        Destinations = NamedDestinations(script);
        _sandbox = new ScriptSandbox(limits, deterministic: false);
        _sandbox.Define("id", args => IdOf(args.Length > 0 ? args[0] : JsValue.Undefined), 1);
        _sandbox.Define("loadTo", args =>
            Load(args.Length > 0 && args[0].IsString() ? args[0].AsString() : throw new ScriptRunException("loadTo(name, obj, …) needs the destination name first"), args.Skip(1).ToArray()), 4);
        foreach (var name in Destinations.Where(d => IdentifierPattern().IsMatch(d)))
            _sandbox.Define("loadTo" + name, args => Load(name, args), 3);
        _sandbox.Define("__magpie_deleted", args => DefaultDelete(args[0].AsString(), args[1].AsString()), 2);
        _sandbox.Seal();
    }

    /// <summary>Exchanges / topics the script names literally (<c>loadToOrders(</c>, <c>loadTo('orders.x'</c>): declared up front, and where deletes go by default.</summary>
    public IReadOnlyList<string> Destinations { get; }

    /// <summary>Parses and prepares the script; a syntax error becomes a <see cref="ScriptSyntaxException"/> at its place in the user's text.</summary>
    public static TransformScript Compile(string script, ScriptLimits limits)
    {
        var lines = script.Split('\n');
        Prepared<Script> source;
        try { source = ScriptSandbox.Prepare(Prologue + script + "\n}", "script", PrologueLines); }
        catch (ScriptSyntaxException e) when (e.Line > lines.Length)
        {
            // Past the user's last line means the wrapper's closing brace: the script ended too early.
            throw new ScriptSyntaxException($"script does not parse: {e.Message[..e.Message.LastIndexOf(" (line", StringComparison.Ordinal)]} at the end of the script (an unclosed bracket or string?)", lines.Length, lines[^1].Length + 1);
        }
        return new TransformScript(script, source, limits);
    }

    /// <summary>Runs the script for one change; what it loaded, in call order. Throws <see cref="ScriptRunException"/>.</summary>
    public IReadOnlyList<LoadedMessage> Run(ChangeEvent change)
    {
        _loaded.Clear();
        _currentId = change.Id;
        _sandbox.Run(() =>
        {
            _sandbox.Engine.Execute(_source);
            var transform = _sandbox.Engine.GetValue("__magpie_transform");
            if (change.Op == ChangeOp.Delete)
            {
                _current = null;
                return _sandbox.Engine.Invoke(transform, JsValue.Null, ["delete", change.Id, change.Collection]);
            }
            var doc = JsValueJson.ToJs(_sandbox.Engine, change.Document!.Value);
            _current = (ObjectInstance)doc;
            return _sandbox.Engine.Invoke(transform, doc, ["put", change.Id, change.Collection]);
        }, PrologueLines);
        return [.. _loaded];
    }

    private JsValue IdOf(JsValue value)
    {
        if (value is ObjectInstance o && ReferenceEquals(o, _current)) return _currentId;
        if (value.IsObject() && value.AsObject().Get("@metadata") is { } meta && meta.IsObject() && meta.AsObject().Get("@id") is { } id && id.IsString()) return id;
        return JsValue.Undefined;
    }

    private JsValue Load(string destination, JsValue[] args)
    {
        if (args.Length == 0 || !args[0].IsObject()) throw new ScriptRunException($"loadTo{destination}(obj, …) needs an object to publish");
        var body = JsValueJson.Serialize(_sandbox.Engine, args[0], _maxDepth);
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

}
