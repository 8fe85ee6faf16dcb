using System.Text.Json;

namespace Magpie.Contracts.Documents;

/// <summary>A document as every reader gets it back (GET /docs, query results): its fields plus <c>@metadata</c> with id, collection, etag and last-modified.</summary>
public static class DocumentMetadata
{
    public static void WriteWithMetadata(Utf8JsonWriter w, JsonElement document, string id, string collection, long etag, DateTimeOffset lastModified)
    {
        w.WriteStartObject();
        JsonElement? userMeta = null;
        foreach (var p in document.EnumerateObject())
        {
            if (p.NameEquals("@metadata")) { userMeta = p.Value; continue; }
            WriteAsWritten(w, p);
        }
        w.WriteStartObject("@metadata");
        if (userMeta is { ValueKind: JsonValueKind.Object } m)
            foreach (var p in m.EnumerateObject())
                if (p.Name is not ("@id" or "@collection" or "@etag" or "@last-modified")) WriteAsWritten(w, p);
        w.WriteString("@id", id);
        w.WriteString("@collection", collection);
        w.WriteNumber("@etag", etag);
        w.WriteString("@last-modified", lastModified);
        w.WriteEndObject();
        w.WriteEndObject();
    }

    /// <summary>
    /// A result of a query ordered by <c>score()</c>: the document as written, with <c>@index-score</c> added to its
    /// <c>@metadata</c> (as RavenDB does), so a client can see why hits are in their order.
    /// </summary>
    public static JsonElement WithIndexScore(JsonElement result, float score) => With(result, "@index-score", JsonSerializer.SerializeToElement(score));

    /// <summary>Whether the document's <c>@metadata</c> holds the string <paramref name="value"/> under <paramref name="name"/>.</summary>
    public static bool Holds(JsonElement document, string name, string value) =>
        document.ValueKind == JsonValueKind.Object && document.TryGetProperty("@metadata", out var meta) && meta.ValueKind == JsonValueKind.Object
        && meta.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String && v.ValueEquals(value);

    /// <summary>The result as written, with <paramref name="name"/> set to <paramref name="value"/> in its <c>@metadata</c> (added if it has none).</summary>
    public static JsonElement With(JsonElement result, string name, JsonElement value) => With(result, (name, value));

    /// <summary>The result as written, with each name set to its value in its <c>@metadata</c> (added if it has none).</summary>
    public static JsonElement With(JsonElement result, params (string Name, JsonElement Value)[] values)
    {
        if (result.ValueKind != JsonValueKind.Object) return result;
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            JsonElement? meta = null;
            foreach (var p in result.EnumerateObject())
            {
                if (p.NameEquals("@metadata")) { meta = p.Value; continue; }
                WriteAsWritten(w, p);
            }
            w.WriteStartObject("@metadata");
            if (meta is { ValueKind: JsonValueKind.Object } m)
                foreach (var p in m.EnumerateObject())
                    if (!values.Any(v => p.NameEquals(v.Name))) WriteAsWritten(w, p);
            foreach (var (name, value) in values)
            {
                w.WritePropertyName(name);
                value.WriteTo(w);
            }
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return JsonDocument.Parse(buffer.WrittenMemory).RootElement;
    }

    /// <summary>
    /// The value as its original text: <c>JsonProperty.WriteTo</c> would re-escape strings (<c>+</c> → <c>\u002B</c>, <c>\u00e9</c> →
    /// <c>\u00E9</c>), and a document comes back as it was written.
    /// </summary>
    private static void WriteAsWritten(Utf8JsonWriter w, JsonProperty p)
    {
        w.WritePropertyName(p.Name);
        w.WriteRawValue(System.Runtime.InteropServices.JsonMarshal.GetRawUtf8Value(p.Value), skipInputValidation: true);
    }
}
