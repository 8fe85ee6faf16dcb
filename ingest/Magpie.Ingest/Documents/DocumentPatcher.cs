using System.Text;
using Microsoft.AspNetCore.JsonPatch;
using Microsoft.AspNetCore.JsonPatch.Exceptions;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace Magpie.Ingest.Documents;

/// <summary>
/// RFC 6902 JSON Patch, applied by Microsoft.AspNetCore.JsonPatch (its JObject adapter). The mirror has
/// no System.Text.Json patch library, so patches take a Newtonsoft round-trip; PUT stays on System.Text.Json.
/// </summary>
public static class DocumentPatcher
{
    /// <summary>Parses a JSON Patch document; null and a reason when it is not one.</summary>
    public static JsonPatchDocument? Parse(ReadOnlySpan<byte> json, out string? error)
    {
        error = null;
        try
        {
            var text = Encoding.UTF8.GetString(json);
            var token = JToken.Parse(text, new JsonLoadSettings { LineInfoHandling = LineInfoHandling.Ignore });
            if (token is not JArray ops) { error = "a JSON Patch must be a JSON array of operations"; return null; }
            foreach (var op in ops)
            {
                if (op is not JObject o || o["op"]?.Type != JTokenType.String || o["path"]?.Type != JTokenType.String)
                { error = "every JSON Patch operation needs string 'op' and 'path' members"; return null; }
                var name = (string)o["op"]!;
                if (name is not ("add" or "remove" or "replace" or "move" or "copy" or "test"))
                { error = $"unknown JSON Patch operation '{name}'"; return null; }
            }
            return ops.ToObject<JsonPatchDocument>();
        }
        catch (Exception e) when (e is JsonException or JsonPatchException or ArgumentException)
        {
            error = $"invalid JSON Patch: {e.Message}";
            return null;
        }
    }

    /// <summary>Applies <paramref name="patch"/> to a document; throws <see cref="JsonPatchException"/> when it can't.</summary>
    public static byte[] Apply(ReadOnlySpan<byte> document, JsonPatchDocument patch)
    {
        var target = JObject.Parse(Encoding.UTF8.GetString(document));
        patch.ApplyTo(target);
        return Encoding.UTF8.GetBytes(target.ToString(Formatting.None));
    }
}
