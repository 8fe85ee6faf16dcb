using System.Buffers;
using System.Runtime.InteropServices;
using System.Text.Json;
using Jint;
using Jint.Native;
using Magpie.Contracts;
using Magpie.Query.Rql;
using Magpie.Scripting;

namespace Magpie.Query.Operations;

/// <summary>
/// <c>update { … }</c>, RavenDB's patch by query: the block runs with the document as <c>this</c> (and under the query's alias),
/// with the query's declared functions, in the sandbox maps and projections run in (time, statements, memory per document, frozen
/// built-ins, no clock). What it changes is written back; everything it left alone keeps its original text byte for byte
/// (<see cref="Preserving"/>): a number written <c>1.50</c> stays <c>1.50</c>, an escape stays as it was.
/// </summary>
public sealed class ScriptPatch
{
    private readonly ScriptSandbox _sandbox;
    private readonly Prepared<Acornima.Ast.Script> _source;
    private readonly int _maxDepth;
    private JsValue? _function;

    public ScriptPatch(RqlQuery query, ScriptLimits limits)
    {
        _maxDepth = limits.MaxJsonDepth;
        _sandbox = new ScriptSandbox(limits, deterministic: true);
        _sandbox.Define("id", Projections.ScriptProjection.IdOf, 1);
        _sandbox.Seal();
        var alias = query.Alias ?? "__document";
        var text = $"(function ({alias}) {{\n{string.Join("\n", query.Functions)}\n{query.Update![1..^1]}\n}})";
        try { _source = ScriptSandbox.Prepare(text, "update"); }
        catch (ScriptSyntaxException e) { throw new QueryProblem(ErrorKind.Invalid, $"the update does not parse: {e.Message}"); }
    }

    /// <summary>
    /// The document after the update: <paramref name="document"/> is as a reader gets it (with <c>@metadata</c>); the result is what
    /// the store should keep (the store's own metadata left out, <paramref name="marker"/> added to <c>@metadata</c> as <c>@operation</c>).
    /// Throws <see cref="ScriptRunException"/> when the script fails on it.
    /// </summary>
    public string Apply(JsonElement document, string marker)
    {
        var patched = _sandbox.Run(() =>
        {
            var engine = _sandbox.Engine;
            var function = _function ??= engine.Evaluate(_source);
            var doc = JsValueJson.ToJs(engine, document);
            function.Call(doc, [doc]);
            return JsValueJson.Serialize(engine, doc, _maxDepth);
        });
        using var result = JsonDocument.Parse(patched);
        return Preserving(document, result.RootElement, marker);
    }

    /// <summary>Metadata the store keeps itself: never written into a document's body.</summary>
    private static readonly HashSet<string> StoreMetadata = ["@id", "@collection", "@etag", "@last-modified"];

    public const string OperationMarker = "@operation";

    /// <summary>The operation that last updated a document (its <c>@metadata.@operation</c>), if any.</summary>
    public static string? MarkerOf(JsonElement document) =>
        document.TryGetProperty("@metadata", out var m) && m.ValueKind == JsonValueKind.Object && m.TryGetProperty(OperationMarker, out var op)
            && op.ValueKind == JsonValueKind.String ? op.GetString() : null;

    /// <summary>
    /// <paramref name="patched"/> written with the original text of every value equal to <paramref name="original"/>'s; the store's
    /// metadata left out of <c>@metadata</c> and the operation's marker put in.
    /// </summary>
    public static string Preserving(JsonElement original, JsonElement patched, string marker)
    {
        var buffer = new ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer, WireJson.Writer))
        {
            w.WriteStartObject();
            var wroteMetadata = false;
            foreach (var p in patched.EnumerateObject())
            {
                if (p.NameEquals("@metadata"))
                {
                    WriteMetadata(w, original.TryGetProperty("@metadata", out var om) ? om : default, p.Value, marker);
                    wroteMetadata = true;
                    continue;
                }
                w.WritePropertyName(p.Name);
                if (original.TryGetProperty(p.Name, out var before)) Merge(w, before, p.Value);
                else Raw(w, p.Value);
            }
            if (!wroteMetadata) WriteMetadata(w, default, default, marker);
            w.WriteEndObject();
        }
        return System.Text.Encoding.UTF8.GetString(buffer.WrittenSpan);
    }

    private static void WriteMetadata(Utf8JsonWriter w, JsonElement original, JsonElement patched, string marker)
    {
        w.WriteStartObject("@metadata");
        if (patched.ValueKind == JsonValueKind.Object)
            foreach (var p in patched.EnumerateObject())
            {
                if (StoreMetadata.Contains(p.Name) || p.NameEquals(OperationMarker)) continue;
                w.WritePropertyName(p.Name);
                if (original.ValueKind == JsonValueKind.Object && original.TryGetProperty(p.Name, out var before)) Merge(w, before, p.Value);
                else Raw(w, p.Value);
            }
        w.WriteString(OperationMarker, marker);
        w.WriteEndObject();
    }

    private static void Merge(Utf8JsonWriter w, JsonElement before, JsonElement after)
    {
        if (before.ValueKind == JsonValueKind.Object && after.ValueKind == JsonValueKind.Object)
        {
            w.WriteStartObject();
            foreach (var p in after.EnumerateObject())
            {
                w.WritePropertyName(p.Name);
                if (before.TryGetProperty(p.Name, out var b)) Merge(w, b, p.Value);
                else Raw(w, p.Value);
            }
            w.WriteEndObject();
        }
        else if (before.ValueKind == JsonValueKind.Array && after.ValueKind == JsonValueKind.Array && before.GetArrayLength() == after.GetArrayLength())
        {
            w.WriteStartArray();
            foreach (var (b, a) in before.EnumerateArray().Zip(after.EnumerateArray())) Merge(w, b, a);
            w.WriteEndArray();
        }
        else Raw(w, Same(before, after) ? before : after);
    }

    /// <summary>The same value as JavaScript sees it: numbers by their double (what a script reads and writes back), strings by text.</summary>
    private static bool Same(JsonElement a, JsonElement b) => (a.ValueKind, b.ValueKind) switch
    {
        (JsonValueKind.Number, JsonValueKind.Number) => a.GetDouble().Equals(b.GetDouble()),
        (JsonValueKind.String, JsonValueKind.String) => a.ValueEquals(b.GetString()),
        (JsonValueKind.True, JsonValueKind.True) or (JsonValueKind.False, JsonValueKind.False) or (JsonValueKind.Null, JsonValueKind.Null) => true,
        _ => false,
    };

    private static void Raw(Utf8JsonWriter w, JsonElement value) => w.WriteRawValue(JsonMarshal.GetRawUtf8Value(value), skipInputValidation: true);
}
