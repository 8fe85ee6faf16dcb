using Magpie.Contracts.Documents;
using System.Text.Json;

namespace Magpie.Ingest.Documents;

/// <summary>Checks and reads of document JSON shared by the HTTP API and the input-topic consumer.</summary>
public static class DocumentJson
{
    public const int DefaultMaxDepth = 64;

    /// <summary>Null when <paramref name="json"/> is a JSON object within the depth limit, else the reason.</summary>
    public static string? ValidateObject(ReadOnlySpan<byte> json, int maxDepth = DefaultMaxDepth)
    {
        var reader = new Utf8JsonReader(json, new JsonReaderOptions { MaxDepth = maxDepth });
        try
        {
            if (!reader.Read()) return "the document is empty";
            if (reader.TokenType != JsonTokenType.StartObject) return $"a document must be a JSON object, not {Describe(reader.TokenType)}";
            reader.Skip();
            reader.Read(); // throws on anything after the object but whitespace
            return null;
        }
        catch (JsonException e)
        {
            return MalformedReason(e);
        }
    }

    public static string MalformedReason(JsonException e) => e.Message.Contains("maximum configured depth", StringComparison.OrdinalIgnoreCase)
        ? $"the JSON nests deeper than allowed: {e.Message}"
        : $"malformed JSON: {e.Message}";

    /// <summary>The collection a document names in <c>@metadata.@collection</c>, if any.</summary>
    public static string? ExplicitCollection(JsonElement document) =>
        document.TryGetProperty("@metadata", out var meta) && meta.ValueKind == JsonValueKind.Object &&
        meta.TryGetProperty("@collection", out var c) && c.ValueKind == JsonValueKind.String && c.GetString() is { Length: > 0 } name
            ? name
            : null;

    public static string? ExplicitCollection(ReadOnlySpan<byte> json)
    {
        // Cheap pre-check: most documents carry no metadata and need no parse.
        if (json.IndexOf("\"@metadata\""u8) < 0) return null;
        var reader = new Utf8JsonReader(json);
        using var doc = JsonDocument.ParseValue(ref reader);
        return ExplicitCollection(doc.RootElement);
    }

    /// <summary>
    /// Writes a stored document with RavenDB-style metadata merged into <c>@metadata</c>:
    /// <c>@id</c>, <c>@collection</c>, <c>@etag</c>, <c>@last-modified</c>.
    /// </summary>
    public static void WriteWithMetadata(Utf8JsonWriter w, StoredDocument doc)
    {
        using var parsed = JsonDocument.Parse(doc.Json);
        DocumentMetadata.WriteWithMetadata(w, parsed.RootElement, doc.Id, doc.Collection, doc.Etag, doc.LastModified);
    }

    private static string Describe(JsonTokenType t) => t switch
    {
        JsonTokenType.StartArray => "an array",
        JsonTokenType.String => "a string",
        JsonTokenType.Number => "a number",
        JsonTokenType.True or JsonTokenType.False => "a boolean",
        JsonTokenType.Null => "null",
        _ => t.ToString(),
    };
}
