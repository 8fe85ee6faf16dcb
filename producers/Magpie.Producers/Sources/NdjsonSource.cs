using System.Text.Json;

namespace Magpie.Producers.Sources;

/// <summary>
/// One JSON document per line. The id comes from <c>@metadata.@id</c>, else from <c>idField</c>
/// (default <c>id</c>); a line without one, or that is not a JSON object, stops the import with its line number.
/// </summary>
public static class NdjsonSource
{
    public static IEnumerable<DocumentWrite> Read(string path, string idField = "id")
    {
        var lineNumber = 0;
        foreach (var line in File.ReadLines(path))
        {
            lineNumber++;
            if (string.IsNullOrWhiteSpace(line)) continue;
            string id;
            try
            {
                using var doc = JsonDocument.Parse(line);
                var root = doc.RootElement;
                if (root.ValueKind != JsonValueKind.Object) throw new FormatException($"{path}:{lineNumber}: a line must hold a JSON object");
                id = IdOf(root, idField) ?? throw new FormatException($"{path}:{lineNumber}: no '@metadata.@id' or '{idField}' string member");
            }
            catch (JsonException e)
            {
                throw new FormatException($"{path}:{lineNumber}: malformed JSON: {e.Message}", e);
            }
            yield return DocumentWrite.Put(id, System.Text.Encoding.UTF8.GetBytes(line));
        }
    }

    private static string? IdOf(JsonElement root, string idField)
    {
        if (root.TryGetProperty("@metadata", out var meta) && meta.ValueKind == JsonValueKind.Object &&
            meta.TryGetProperty("@id", out var mid) && mid.ValueKind == JsonValueKind.String) return mid.GetString();
        return root.TryGetProperty(idField, out var id) && id.ValueKind == JsonValueKind.String ? id.GetString() : null;
    }
}
