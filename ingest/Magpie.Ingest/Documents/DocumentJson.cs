using System.Text;
using Magpie.Contracts.Documents;
using System.Buffers;
using System.Text.Json;
using System.Text.Unicode;

namespace Magpie.Ingest.Documents;

/// <summary>Checks and reads of document JSON shared by the HTTP API and the input-topic consumer.</summary>
public static class DocumentJson
{
    public const int DefaultMaxDepth = 64;

    /// <summary>
    /// Null when <paramref name="json"/> is a JSON object within the depth limit whose every string and name is
    /// text that can be served back, else the reason. <see cref="Utf8JsonReader"/> checks neither the UTF-8 of
    /// unescaped strings nor the surrogates of escaped ones until a string is read, so this does both here:
    /// a document that passes can always be parsed, re-serialised and read as .NET strings.
    /// </summary>
    public static string? ValidateObject(ReadOnlySpan<byte> json, int maxDepth = DefaultMaxDepth)
    {
        var reader = new Utf8JsonReader(json, new JsonReaderOptions { MaxDepth = maxDepth });
        try
        {
            if (!reader.Read()) return "the document is empty";
            if (reader.TokenType != JsonTokenType.StartObject) return $"a document must be a JSON object, not {Describe(reader.TokenType)}";
            return InvalidTextFrom(ref reader, json);
        }
        catch (JsonException e)
        {
            return MalformedReason(e);
        }
    }

    /// <summary>
    /// <see cref="ValidateObject"/> for a document a parser has already read whole as a well-formed JSON object within
    /// <paramref name="maxDepth"/> (<see cref="WriteCommand.ParsedDepth"/>): only its text is left to check, in two vectorised scans
    /// (valid UTF-8; <c>\u</c> escapes that pair their surrogates) instead of a reader's pass over every string, which was a seventh of
    /// the bulk write path's CPU in a profile. A document either scan doubts gets the full check, which says where.
    /// </summary>
    public static string? ValidateParsedObject(ReadOnlySpan<byte> json, int maxDepth = DefaultMaxDepth) =>
        Utf8.IsValid(json) && !HasLoneSurrogateEscape(json) && !MayHoldNumberBeyondDouble(json) ? null : ValidateObject(json, maxDepth);

    /// <summary>
    /// Whether the text could hold a number past a double's range (±1.8e308), which a document may not: such a number could not
    /// be indexed, compared, projected or kept by a script's update. Such a number has an exponent of three digits or more, or
    /// 309 digits in a row; text that merely looks so ("Ice100") gets the full check, which reads numbers as numbers.
    /// </summary>
    internal static bool MayHoldNumberBeyondDouble(ReadOnlySpan<byte> json)
    {
        var at = 0;
        while (at < json.Length)
        {
            var start = json[at..].IndexOfAnyInRange((byte)'0', (byte)'9');
            if (start < 0) return false;
            start += at;
            var length = json[start..].IndexOfAnyExceptInRange((byte)'0', (byte)'9');
            if (length < 0) length = json.Length - start;
            if (length >= 309) return true;
            if (length >= 3)
            {
                var before = start - 1;
                if (before >= 0 && json[before] == (byte)'+') before--;
                if (before >= 0 && (json[before] | 0x20) == (byte)'e') return true;
            }
            at = start + length;
        }
        return false;
    }

    /// <summary>
    /// A <c>\u</c> escape of well-formed JSON that is half a surrogate pair without its other half (JSON escapes a character outside
    /// the BMP as two escapes, high then low). Well-formed: every backslash starts an escape, and <c>\u</c> has four hex digits.
    /// </summary>
    internal static bool HasLoneSurrogateEscape(ReadOnlySpan<byte> json)
    {
        var at = json.IndexOf((byte)'\\');
        while (at >= 0)
        {
            // Bounds a well-formed document always meets; one that does not gets the full check, which says what is wrong.
            var next = at + 2;
            if (next > json.Length) return true;
            if (json[at + 1] == (byte)'u')
            {
                if (at + 6 > json.Length) return true;
                var unit = HexUnit(json.Slice(at + 2, 4));
                next = at + 6;
                if (char.IsLowSurrogate(unit)) return true;
                if (char.IsHighSurrogate(unit))
                {
                    if (next + 6 > json.Length || json[next] != (byte)'\\' || json[next + 1] != (byte)'u' || !char.IsLowSurrogate(HexUnit(json.Slice(next + 2, 4))))
                        return true;
                    next += 6;
                }
            }
            var rest = json[next..].IndexOf((byte)'\\');
            at = rest < 0 ? -1 : next + rest;
        }
        return false;
    }

    private static char HexUnit(ReadOnlySpan<byte> hex)
    {
        var unit = 0;
        foreach (var b in hex) unit = unit * 16 + (b <= '9' ? b - '0' : (b | 0x20) - 'a' + 10);
        return (char)unit;
    }

    /// <summary>Null when every string and name of <paramref name="json"/> (any JSON value, e.g. a JSON Patch) is text, else the reason; malformed JSON is left to the caller's parser.</summary>
    public static string? InvalidText(ReadOnlySpan<byte> json)
    {
        var reader = new Utf8JsonReader(json, new JsonReaderOptions { MaxDepth = 1024 });
        try { return InvalidTextFrom(ref reader, json); }
        catch (JsonException) { return null; }
    }

    /// <summary>Strings and names that are not text, and numbers past a double's range.</summary>
    /// <param name="json">Its text; when valid UTF-8 (one vectorised pass; outside strings JSON is ASCII anyway): then only
    /// strings with <c>\u</c> escapes need a look, for lone surrogates; otherwise every string is checked, to say where.</param>
    private static string? InvalidTextFrom(ref Utf8JsonReader reader, ReadOnlySpan<byte> json)
    {
        var utf8Valid = Utf8.IsValid(json);
        while (reader.Read())
        {
            if (reader.TokenType is JsonTokenType.String or JsonTokenType.PropertyName && (!utf8Valid || reader.ValueIsEscaped)
                && InvalidToken(ref reader, utf8Valid) is { } textError)
                return textError;
            if (reader.TokenType == JsonTokenType.Number && !(reader.TryGetDouble(out var d) && double.IsFinite(d)))
                return $"the number {Shorten(reader.ValueSpan)} at {PointerAt(json, reader.TokenStartIndex)} is beyond the range of a double (±1.8e308), which Magpie cannot index or compare exactly";
        }
        return null;
    }

    /// <summary>The JSON Pointer of the value starting at <paramref name="tokenStart"/> (<c>/Lines/2/Price</c>), read again on the way to an error.</summary>
    internal static string PointerAt(ReadOnlySpan<byte> json, long tokenStart)
    {
        var reader = new Utf8JsonReader(json, new JsonReaderOptions { MaxDepth = 1024 });
        var path = new List<(string? Name, int Index)>();
        try
        {
            while (reader.Read())
            {
                var isValue = reader.TokenType is not (JsonTokenType.PropertyName or JsonTokenType.EndObject or JsonTokenType.EndArray);
                if (isValue && path.Count > 0 && path[^1].Name is null) path[^1] = (null, path[^1].Index + 1);
                if (reader.TokenStartIndex == tokenStart)
                    return "/" + string.Join('/', path.Select(p => p.Name is { } n ? n.Replace("~", "~0").Replace("/", "~1") : p.Index.ToString()));
                switch (reader.TokenType)
                {
                    case JsonTokenType.PropertyName: path[^1] = (reader.GetString(), 0); break;
                    case JsonTokenType.StartObject: path.Add(("", 0)); break;
                    case JsonTokenType.StartArray: path.Add((null, -1)); break;
                    case JsonTokenType.EndObject or JsonTokenType.EndArray: path.RemoveAt(path.Count - 1); break;
                }
            }
        }
        catch (Exception e) when (e is JsonException or InvalidOperationException) { }
        return $"byte {tokenStart}";
    }

    private static string Shorten(ReadOnlySpan<byte> number) =>
        number.Length <= 40 ? Encoding.UTF8.GetString(number) : Encoding.UTF8.GetString(number[..40]) + "…";

    private static string? InvalidToken(ref Utf8JsonReader reader, bool utf8Valid)
    {
        var what = reader.TokenType == JsonTokenType.PropertyName ? "a property name" : "a string";
        if (!utf8Valid && !Utf8.IsValid(reader.ValueSpan)) return $"{what} at byte {reader.TokenStartIndex} is not valid UTF-8";
        if (!reader.ValueIsEscaped || reader.ValueSpan.IndexOf("\\u"u8) < 0) return null;
        // Unescaping is what finds a lone surrogate (\ud800 without its pair); the unescaped text is never longer than the escaped.
        var rented = ArrayPool<char>.Shared.Rent(reader.ValueSpan.Length);
        try
        {
            reader.CopyString(rented);
            return null;
        }
        catch (InvalidOperationException)
        {
            return $"{what} at byte {reader.TokenStartIndex} is not valid text (invalid UTF-8, or a \\u escape of a lone surrogate)";
        }
        finally
        {
            ArrayPool<char>.Shared.Return(rented);
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
