using System.Text.Json;

namespace Magpie.Query.Rql;

/// <summary>
/// Values at a property path of a JSON document, as RQL names them: <c>Address.City</c>, and through arrays —
/// <c>Lines[].Product</c> says so, <c>Lines.Product</c> does it too (each element's property).
/// </summary>
public static class DocumentPaths
{
    /// <summary>The values at the path; a missing step gives one Undefined element (so "= null" can see a missing field).</summary>
    public static IEnumerable<JsonElement> Values(JsonElement d, string path)
    {
        IEnumerable<JsonElement> current = [d];
        foreach (var raw in path.Split('.'))
        {
            var every = raw.EndsWith("[]", StringComparison.Ordinal);
            var part = every ? raw[..^2] : raw;
            current = current.SelectMany(c => c.ValueKind switch
            {
                JsonValueKind.Object => c.TryGetProperty(part, out var p) ? [p] : [default],
                JsonValueKind.Array => c.EnumerateArray().Select(e => e.ValueKind == JsonValueKind.Object && e.TryGetProperty(part, out var p) ? p : default),
                _ => [default(JsonElement)],
            });
            if (every) current = current.SelectMany<JsonElement, JsonElement>(c => c.ValueKind == JsonValueKind.Array ? c.EnumerateArray() : [c]);
        }
        return current;
    }

    /// <summary>
    /// What <c>select path</c> gives: the value, or null where the path is missing; an array of the values when the path
    /// goes through arrays (<c>Lines[].Product</c>) or finds several.
    /// </summary>
    public static JsonElement? Projected(JsonElement d, string path)
    {
        // A property named as the whole path (a grouped query's results keep their key "Lines[].Product" under that name).
        if (d.ValueKind == JsonValueKind.Object && d.TryGetProperty(path, out var named)) return named;
        var values = Values(d, path).Where(v => v.ValueKind != JsonValueKind.Undefined).ToList();
        if (!path.Contains("[]", StringComparison.Ordinal) && values.Count <= 1) return values.Count == 0 ? null : values[0];
        return JsonSerializer.SerializeToElement(values);
    }

    /// <summary>The strings of a value: itself, or every string of an array (nested too).</summary>
    public static IEnumerable<string> Texts(JsonElement value) => value.ValueKind switch
    {
        JsonValueKind.String => [value.GetString()!],
        JsonValueKind.Array => value.EnumerateArray().SelectMany(Texts),
        _ => [],
    };

    /// <summary>The document ids a path holds (strings, through arrays).</summary>
    public static IEnumerable<string> Ids(JsonElement d, string path) =>
        Values(d, path).SelectMany<JsonElement, JsonElement>(v => v.ValueKind == JsonValueKind.Array ? v.EnumerateArray() : [v])
            .Where(v => v.ValueKind == JsonValueKind.String).Select(v => v.GetString()!).Where(id => id.Length > 0);
}
