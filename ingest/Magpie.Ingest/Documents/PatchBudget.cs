using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using System.Runtime.InteropServices;
using Microsoft.AspNetCore.JsonPatch.SystemTextJson.Operations;

namespace Magpie.Ingest.Documents;

/// <summary>
/// The document limits, held while a JSON Patch applies: before an operation adds a value, its size and depth are measured
/// (never more of it than the budget has left) and the operation is refused if the document would cross either limit. The
/// running size is an upper bound (removals are not subtracted); when it crosses the limit the document is measured again
/// exactly, so a patch that removes as much as it adds is not refused for what it no longer holds.
/// </summary>
internal sealed class PatchBudget(long bytes, int maxBytes, int maxDepth)
{
    private long _bytes = bytes;
    private int _operation;

    /// <summary>An operation that adds <paramref name="value"/> (an <c>add</c>, <c>replace</c> or <c>copy</c>) to <paramref name="document"/>.</summary>
    public void Grow(Operation operation, JsonNode? value, JsonNode document, JsonNode? replaced) =>
        Grow(operation, Measure(value, maxBytes), document, replaced);

    /// <summary>An <c>add</c> or <c>replace</c> whose value the patch brought (a <see cref="JsonElement"/> from its parse).</summary>
    public void Grow(Operation operation, object? value, JsonNode document, JsonNode? replaced) => Grow(operation, Measure(value), document, replaced);

    /// <summary>A <c>move</c>: no growth, but the value may land deeper than it was.</summary>
    public void Place(Operation operation, JsonNode? value)
    {
        _operation++;
        CheckDepth(operation, Measure(value, int.MaxValue).Depth);
    }

    private void Grow(Operation operation, Size value, JsonNode document, JsonNode? replaced)
    {
        _operation++;
        CheckDepth(operation, value.Depth);
        // The member's name, quotes, colon and comma come with the value; a value it takes the place of goes.
        var grows = value.Bytes + operation.path.Length + 4 - (replaced is null ? 0 : Measure(replaced, long.MaxValue).Bytes);
        if (_bytes + grows > maxBytes) _bytes = Measure(document, maxBytes).Bytes;
        if (_bytes + grows > maxBytes)
            throw new DocumentPatchException(
                $"operation {_operation} ('{operation.op}' to '{Shorten(operation.path)}') would take the patched document past the limit of {maxBytes} bytes; nothing was written",
                breaksLimits: true);
        _bytes += grows;
    }

    private void CheckDepth(Operation operation, int valueDepth)
    {
        // The root object is level 1; a value at a path of n steps sits inside n containers.
        var depth = operation.path.Count(c => c == '/') + valueDepth;
        if (depth > maxDepth)
            throw new DocumentPatchException(
                $"operation {_operation} ('{operation.op}' to '{Shorten(operation.path)}') would nest the patched document {depth} levels deep, deeper than the limit of {maxDepth}; nothing was written",
                breaksLimits: true);
    }

    private static string Shorten(string path) => path.Length <= 64 ? path : path[..64] + "…";

    private readonly record struct Size(long Bytes, int Depth);

    private static Size Measure(object? value)
    {
        if (value is JsonElement element)
        {
            var raw = JsonMarshal.GetRawUtf8Value(element);
            var reader = new Utf8JsonReader(raw, new JsonReaderOptions { MaxDepth = 1024 });
            var depth = 0;
            while (reader.Read())
                if (reader.TokenType is JsonTokenType.StartObject or JsonTokenType.StartArray) depth = Math.Max(depth, reader.CurrentDepth + 1);
            return new Size(raw.Length, depth);
        }
        return Measure(JsonSerializer.SerializeToNode(value), int.MaxValue);
    }

    /// <summary>The node's serialised size (an estimate that counts names and raw values as UTF-8) and nesting; stops counting past <paramref name="cap"/> bytes.</summary>
    private static Size Measure(JsonNode? node, long cap)
    {
        long bytes = 0;
        var deepest = 0;
        Walk(node, 0);
        return new Size(bytes, deepest);

        void Walk(JsonNode? n, int level)
        {
            if (bytes > cap) return;
            switch (n)
            {
                case null: bytes += 4; break;
                case JsonObject o:
                    deepest = Math.Max(deepest, level + 1);
                    bytes += 2;
                    foreach (var (name, child) in o)
                    {
                        bytes += Encoding.UTF8.GetByteCount(name) + 4;
                        Walk(child, level + 1);
                        if (bytes > cap) return;
                    }
                    break;
                case JsonArray a:
                    deepest = Math.Max(deepest, level + 1);
                    bytes += 2;
                    foreach (var child in a)
                    {
                        bytes += 1;
                        Walk(child, level + 1);
                        if (bytes > cap) return;
                    }
                    break;
                case JsonValue v when v.TryGetValue<JsonElement>(out var element):
                    bytes += JsonMarshal.GetRawUtf8Value(element).Length;
                    break;
                default:
                    bytes += n.ToJsonString().Length;
                    break;
            }
        }
    }
}
