using System.Buffers;
using System.Text.Json;
using System.Text.Json.Nodes;
using Microsoft.AspNetCore.JsonPatch.SystemTextJson;
using Microsoft.AspNetCore.JsonPatch.SystemTextJson.Exceptions;

namespace Magpie.Ingest.Documents;

/// <summary>A patch that can't be applied to the document (a failed test, a missing path), or whose result breaks the document limits.</summary>
public sealed class DocumentPatchException(string message, bool breaksLimits = false) : Exception(message)
{
    /// <summary>The patch applies, but the result is not a document Magpie accepts (too deep): the request is at fault, 400.</summary>
    public bool BreaksLimits { get; } = breaksLimits;
}

/// <summary>
/// RFC 6902 JSON Patch on System.Text.Json (Microsoft.AspNetCore.JsonPatch.SystemTextJson over <see cref="JsonNode"/>). What the
/// patch does not touch is written back as the very bytes it was read from: every value parsed from the stored document
/// keeps its raw text (<c>1.50</c>, <c>…32.720</c>, <c>+02:00</c>, 30-digit integers, <c>\u00e9</c>), so a PATCH changes only
/// what it names. Whitespace between values is not kept (the result is compact). A moved or copied string may have its
/// escapes written differently (the library re-serialises it); its value is the same. Operations apply one at a time, in order.
/// </summary>
public static class DocumentPatcher
{
    private static readonly HashSet<string> Operations = ["add", "remove", "replace", "move", "copy", "test"];

    /// <summary>How the library writes the values a patch brings: <c>+</c>, <c>&lt;</c> and non-ASCII letters as themselves, not <c>\u002B</c>.</summary>
    private static readonly JsonSerializerOptions ValueOptions = new() { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping };

    /// <summary>Parses a JSON Patch document (strict JSON: no comments, NaN, unquoted names or trailing commas); null and a reason when it is not one.</summary>
    public static JsonPatchDocument? Parse(ReadOnlySpan<byte> json, out string? error, int maxDepth = DocumentJson.DefaultMaxDepth)
    {
        error = null;
        JsonDocument parsed;
        // A value in an operation nests at most as deep as a document may, inside the array and the operation object.
        try { parsed = JsonDocument.Parse(json.ToArray(), new JsonDocumentOptions { MaxDepth = maxDepth + 2 }); }
        catch (JsonException e) { error = $"invalid JSON Patch: {DocumentJson.MalformedReason(e)}"; return null; }
        using (parsed)
        {
            // Values are turned into .NET strings while the patch applies: text that is not (a lone surrogate) is refused here.
            if (DocumentJson.InvalidText(json) is { } textError) { error = $"invalid JSON Patch: {textError}"; return null; }
            if (parsed.RootElement.ValueKind != JsonValueKind.Array) { error = "a JSON Patch must be a JSON array of operations"; return null; }
            foreach (var op in parsed.RootElement.EnumerateArray())
            {
                if (op.ValueKind != JsonValueKind.Object || !IsString(op, "op") || !IsString(op, "path"))
                { error = "every JSON Patch operation needs string 'op' and 'path' members"; return null; }
                var name = op.GetProperty("op").GetString()!;
                if (!Operations.Contains(name)) { error = $"unknown JSON Patch operation '{name}'"; return null; }
                if (name is "move" or "copy" && !IsString(op, "from")) { error = $"a JSON Patch '{name}' needs a string 'from'"; return null; }
                if (name is "add" or "replace" or "test" && !op.TryGetProperty("value", out _)) { error = $"a JSON Patch '{name}' needs a 'value'"; return null; }
            }
            try { return parsed.RootElement.Deserialize<JsonPatchDocument>(); }
            catch (Exception e) when (e is JsonException or JsonPatchException or ArgumentException)
            {
                error = $"invalid JSON Patch: {e.Message}";
                return null;
            }
        }
    }

    private static bool IsString(JsonElement o, string name) => o.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String;

    /// <summary>Most operations one patch may hold; every one of them runs inside the write path.</summary>
    public const int MaxOperations = 10_000;

    /// <summary>Longest one patch may run; checked between operations, each of which is bounded by the size budget.</summary>
    public static readonly TimeSpan MaxApplyTime = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Applies <paramref name="patch"/> to a stored document; throws <see cref="DocumentPatchException"/> when it can't (a stored
    /// document deeper than <paramref name="maxDepth"/> included). The document limits hold while the patch applies, not only on its
    /// result: each operation's growth is measured before it runs (a <c>copy</c> of an array into itself doubles it, and 40 of them
    /// would need terabytes), so an operation that would take the document past <paramref name="maxBytes"/> or
    /// <paramref name="maxDepth"/> fails the patch before anything is cloned.
    /// </summary>
    public static byte[] Apply(ReadOnlySpan<byte> document, JsonPatchDocument patch, int maxDepth = DocumentJson.DefaultMaxDepth, int maxBytes = int.MaxValue)
    {
        JsonNode target;
        // A document stored under a higher depth limit than today's is refused, not a failed write batch.
        try { target = JsonNode.Parse(document, documentOptions: new JsonDocumentOptions { MaxDepth = maxDepth })!; }
        catch (JsonException e) { throw new DocumentPatchException($"the stored document can't be patched: {DocumentJson.MalformedReason(e)}", breaksLimits: true); }
        if (patch.Operations.Count > MaxOperations)
            throw new DocumentPatchException($"a patch may hold at most {MaxOperations} operations, this one has {patch.Operations.Count}", breaksLimits: true);
        var budget = new PatchBudget(document.Length, maxBytes, maxDepth);
        var clock = System.Diagnostics.Stopwatch.StartNew();
        foreach (var operation in patch.Operations)
        {
            if (clock.Elapsed > MaxApplyTime)
                throw new DocumentPatchException($"the patch ran longer than {MaxApplyTime.TotalSeconds:0} s and was stopped; split it into smaller patches", breaksLimits: true);
            // The whole document as a target (RFC 6902's path ""): the library throws on it; replacing a document is a PUT.
            if (operation.path == "") throw new DocumentPatchException($"'{operation.op}' at the document root (path \"\") is not supported: PUT the new document instead");
            var one = new JsonPatchDocument { SerializerOptions = ValueOptions };
            try
            {
                switch (operation.op)
                {
                    // The library's copy refuses a string or number value ("could not be copied", 10.0.14): a copy is an add of a clone.
                    case "copy":
                        var source = Resolve(target, operation.from);
                        budget.Grow(operation, source, target, Replaced(target, operation.path));
                        one.Add(operation.path, source?.DeepClone());
                        break;
                    case "move":
                        budget.Place(operation, Resolve(target, operation.from));
                        one.Operations.Add(operation);
                        break;
                    case "add" or "replace":
                        budget.Grow(operation, operation.value, target, Replaced(target, operation.path));
                        one.Operations.Add(operation);
                        break;
                    default:
                        one.Operations.Add(operation);
                        break;
                }
                one.ApplyTo(target);
            }
            // The library's own refusals, and its argument checks on paths it cannot follow (found by fuzzing): the patch fails, not the server.
            catch (Exception e) when (e is JsonPatchException or ArgumentException) { throw new DocumentPatchException(e.Message); }
        }
        var buffer = new ArrayBufferWriter<byte>(document.Length + 64);
        using (var writer = new Utf8JsonWriter(buffer, new JsonWriterOptions { SkipValidation = true }))
            WriteAsRead(target, writer);
        // Values the patch added are written as the patch had them; the store checks the result as it checks a PUT body.
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>The value at a JSON Pointer (RFC 6901); a location that does not exist fails the patch.</summary>
    private static JsonNode? Resolve(JsonNode root, string pointer)
    {
        if (pointer.Length > 0 && pointer[0] != '/') throw new DocumentPatchException($"'{pointer}' is not a JSON Pointer");
        return TryResolve(root, pointer, out var node, out _) ? node : throw new DocumentPatchException($"the location '{pointer}' to copy from does not exist");
    }

    /// <summary>The value an <c>add</c> or <c>replace</c> at <paramref name="pointer"/> takes the place of: an object's member (an array's <c>add</c> inserts).</summary>
    private static JsonNode? Replaced(JsonNode root, string pointer) =>
        TryResolve(root, pointer, out var node, out var parent) && parent is JsonObject ? node : null;

    private static bool TryResolve(JsonNode root, string pointer, out JsonNode? node, out JsonNode? parent)
    {
        node = root;
        parent = null;
        if (pointer.Length > 0 && pointer[0] != '/') return false;
        foreach (var raw in pointer.Split('/').Skip(1))
        {
            var step = raw.Replace("~1", "/").Replace("~0", "~");
            parent = node;
            switch (node)
            {
                case JsonObject o when o.TryGetPropertyValue(step, out var child): node = child; break;
                case JsonArray a when int.TryParse(step, out var i) && i >= 0 && i < a.Count && step == i.ToString(): node = a[i]; break;
                default: return false;
            }
        }
        return true;
    }

    /// <summary>The tree, with each value parsed from JSON (the document's, the patch's) written as its original text.</summary>
    private static void WriteAsRead(JsonNode? node, Utf8JsonWriter writer)
    {
        switch (node)
        {
            case null: writer.WriteNullValue(); break;
            case JsonObject o:
                writer.WriteStartObject();
                foreach (var (name, value) in o)
                {
                    writer.WritePropertyName(name);
                    WriteAsRead(value, writer);
                }
                writer.WriteEndObject();
                break;
            case JsonArray a:
                writer.WriteStartArray();
                foreach (var value in a) WriteAsRead(value, writer);
                writer.WriteEndArray();
                break;
            case JsonValue v when v.TryGetValue<JsonElement>(out var element):
                writer.WriteRawValue(element.GetRawText(), skipInputValidation: true);
                break;
            default: node.WriteTo(writer); break;
        }
    }
}
