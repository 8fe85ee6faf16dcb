using System.Buffers;
using System.Text.Json;

namespace Magpie.Contracts.Changes;

/// <summary>
/// The wire form of a change event: <c>{"id","collection","etag","op","lastModified","document"}</c>.
/// Written by hand so the relay can copy the stored document bytes without re-parsing them.
/// </summary>
public static class ChangeEventJson
{
    public static void Write(IBufferWriter<byte> output, string id, string collection, long etag, ChangeOp op,
        DateTimeOffset lastModified, ReadOnlySpan<byte> documentJson)
    {
        using var w = new Utf8JsonWriter(output);
        w.WriteStartObject();
        w.WriteString("id", id);
        w.WriteString("collection", collection);
        w.WriteNumber("etag", etag);
        w.WriteString("op", OpName(op));
        w.WriteString("lastModified", lastModified);
        w.WritePropertyName("document");
        if (op == ChangeOp.Delete || documentJson.IsEmpty) w.WriteNullValue();
        else w.WriteRawValue(documentJson, skipInputValidation: true);
        w.WriteEndObject();
    }

    public static ChangeEvent Parse(ReadOnlySpan<byte> json)
    {
        var reader = new Utf8JsonReader(json);
        using var doc = JsonDocument.ParseValue(ref reader);
        var root = doc.RootElement;
        var op = root.GetProperty("op").GetString() switch
        {
            "put" => ChangeOp.Put,
            "delete" => ChangeOp.Delete,
            var other => throw new FormatException($"unknown change op '{other}'"),
        };
        var document = root.TryGetProperty("document", out var d) && d.ValueKind == JsonValueKind.Object ? d.Clone() : (JsonElement?)null;
        return new ChangeEvent(
            root.GetProperty("id").GetString()!,
            root.GetProperty("collection").GetString()!,
            root.GetProperty("etag").GetInt64(),
            op,
            root.GetProperty("lastModified").GetDateTimeOffset(),
            document);
    }

    public static string OpName(ChangeOp op) => op == ChangeOp.Delete ? "delete" : "put";
}
