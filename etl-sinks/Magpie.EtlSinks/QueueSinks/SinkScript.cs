using System.Text.Json;
using Acornima.Ast;
using Jint;
using Jint.Native;
using Magpie.Contracts.Documents;
using Magpie.Scripting;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// A queue sink's script, in RavenDB's queue-sink style: it runs once per message with <c>this</c> = the message body (JSON; for a
/// MassTransit message, the message inside the envelope) and <c>message</c> = what the broker said about it (<see cref="IncomingMessage.Describe"/>).
/// <c>put(id, doc)</c> writes a document (an id ending in <c>/</c> gets the message id appended, so a redelivery writes the same
/// document), <c>del(id)</c> deletes one, <c>patch(id, ops)</c> applies a JSON Patch array. A message whose script writes
/// nothing is acknowledged and skipped; one whose script throws goes to the dead letters with the error. Each run starts from
/// fresh globals (the shared sandbox); the clock and <c>Math.random()</c> are allowed, as in ETL transforms.
/// </summary>
public sealed partial class SinkScript
{
    /// <summary>Writes one message may ask for.</summary>
    public const int MaxWrites = 1_000;

    // The script becomes the body of a function, so `return` ends it early and `message` is its parameter.
    private const string Prologue = "function __magpie_sink(message) {\n";
    private const int PrologueLines = 1;

    private readonly ScriptSandbox _sandbox;
    private readonly Prepared<Script> _source;
    private readonly int _maxDepth;
    private readonly List<MessageWrite> _writes = [];
    private string _messageId = "";

    private SinkScript(Prepared<Script> source, ScriptLimits limits, bool usesMessage)
    {
        (_source, _maxDepth, UsesMessage) = (source, limits.MaxJsonDepth, usesMessage);
        _sandbox = new ScriptSandbox(limits, deterministic: false);
        _sandbox.Define("put", args => Add(MessageWriteMethod.Put, args, "put(id, doc) needs an object to write", a => a.IsObject() && !a.IsArray()), 2);
        _sandbox.Define("patch", args => Add(MessageWriteMethod.Patch, args, "patch(id, ops) needs a JSON Patch array ([{ op, path, value }])", a => a.IsArray()), 2);
        _sandbox.Define("del", args => Add(MessageWriteMethod.Delete, args, "", null), 1);
        _sandbox.Seal();
    }

    /// <summary>Parses and prepares the script; a syntax error becomes a <see cref="ScriptSyntaxException"/> at its place in the user's text.</summary>
    public static SinkScript Compile(string script, ScriptLimits limits)
    {
        var lines = script.Split('\n');
        try { return new SinkScript(ScriptSandbox.Prepare(Prologue + script + "\n}", "script", PrologueLines), limits, MessagePattern().IsMatch(script)); }
        catch (ScriptSyntaxException e) when (e.Line > lines.Length)
        {
            throw new ScriptSyntaxException($"script does not parse: {e.Message[..e.Message.LastIndexOf(" (line", StringComparison.Ordinal)]} at the end of the script (an unclosed bracket or string?)", lines.Length, lines[^1].Length + 1);
        }
    }

    /// <summary>Whether the script names <c>message</c> at all; when it does not, no message description is built for it (<c>message</c> is undefined).</summary>
    public bool UsesMessage { get; }

    /// <summary>The writes the script asks for, in call order. Throws <see cref="ScriptRunException"/>.</summary>
    public IReadOnlyList<MessageWrite> Run(JsonElement body, string messageId, JsonElement message)
    {
        _writes.Clear();
        _messageId = messageId;
        _sandbox.Run(() =>
        {
            _sandbox.Engine.Execute(_source);
            var sink = _sandbox.Engine.GetValue("__magpie_sink");
            var described = message.ValueKind == JsonValueKind.Undefined ? JsValue.Undefined : JsValueJson.ToJs(_sandbox.Engine, message);
            return _sandbox.Engine.Invoke(sink, JsValueJson.ToJs(_sandbox.Engine, body), [described]);
        }, PrologueLines);
        return [.. _writes];
    }

    private JsValue Add(MessageWriteMethod method, JsValue[] args, string needs, Func<JsValue, bool>? valid)
    {
        var name = method == MessageWriteMethod.Delete ? "del" : method.ToString().ToLowerInvariant();
        if (args.Length == 0 || !args[0].IsString() || args[0].AsString().Length == 0)
            throw new ScriptRunException($"{name}(id, …) needs the document id, a non-empty string, first");
        var id = args[0].AsString();
        if (id.EndsWith('/')) id += _messageId;
        string? json = null;
        if (valid is not null)
        {
            if (args.Length < 2 || !valid(args[1])) throw new ScriptRunException(needs);
            json = JsValueJson.Serialize(_sandbox.Engine, args[1], _maxDepth);
        }
        if (_writes.Count >= MaxWrites) throw new ScriptRunException($"a message may make at most {MaxWrites:N0} writes");
        _writes.Add(new MessageWrite(method, id, json));
        return JsValue.Undefined;
    }

    [System.Text.RegularExpressions.GeneratedRegex(@"\bmessage\b")]
    private static partial System.Text.RegularExpressions.Regex MessagePattern();
}
