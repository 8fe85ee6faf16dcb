using System.Text.Json;

namespace Magpie.Contracts.Documents;

/// <summary>
/// <c>POST /message_writes</c> on the wire, one shape both sides read: <c>{ "ledger", "messages": [ { "id", "recheck"?, "writes": [ { "method":
/// "PUT"|"PATCH"|"DELETE", "id", "json": document or JSON Patch array } ] } ] }</c>; the answer is <c>{ "results": [ { "message",
/// "result": "applied"|"alreadyApplied"|"refused", "reason"? } ] }</c>. Documents travel as JSON, not as strings of JSON.
/// </summary>
public static class MessageWritesJson
{
    public static void WriteRequest(Utf8JsonWriter w, string ledger, IReadOnlyList<MessageWrites> messages)
    {
        w.WriteStartObject();
        w.WriteString("ledger", ledger);
        w.WriteStartArray("messages");
        foreach (var m in messages)
        {
            w.WriteStartObject();
            w.WriteString("id", m.MessageId);
            if (!m.Recheck) w.WriteBoolean("recheck", false);
            w.WriteStartArray("writes");
            foreach (var write in m.Writes)
            {
                w.WriteStartObject();
                w.WriteString("method", write.Method.ToString().ToUpperInvariant());
                w.WriteString("id", write.Id);
                if (write.Json is { } json)
                {
                    w.WritePropertyName("json");
                    w.WriteRawValue(json, skipInputValidation: false);
                }
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteEndObject();
    }

    /// <summary>The request, or why it is not one.</summary>
    public static (string Ledger, List<MessageWrites> Messages)? ReadRequest(JsonElement root, out string? error)
    {
        error = null;
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("ledger", out var ledger) || ledger.ValueKind != JsonValueKind.String)
            return Fail("the body must be an object with a string 'ledger' and a 'messages' array", out error);
        if (!root.TryGetProperty("messages", out var list) || list.ValueKind != JsonValueKind.Array)
            return Fail("'messages' must be an array", out error);
        var messages = new List<MessageWrites>(list.GetArrayLength());
        var i = 0;
        foreach (var m in list.EnumerateArray())
        {
            if (m.ValueKind != JsonValueKind.Object || !m.TryGetProperty("id", out var id) || id.ValueKind != JsonValueKind.String
                || !m.TryGetProperty("writes", out var writes) || writes.ValueKind != JsonValueKind.Array)
                return Fail($"messages[{i}] must be an object with a string 'id' and a 'writes' array", out error);
            var parsed = new List<MessageWrite>(writes.GetArrayLength());
            foreach (var w in writes.EnumerateArray())
            {
                if (w.ValueKind != JsonValueKind.Object || !w.TryGetProperty("id", out var docId) || docId.ValueKind != JsonValueKind.String
                    || !w.TryGetProperty("method", out var method) || method.ValueKind != JsonValueKind.String
                    || !Enum.TryParse<MessageWriteMethod>(method.GetString(), ignoreCase: true, out var kind) || !Enum.IsDefined(kind))
                    return Fail($"messages[{i}]: each write needs a string 'id' and a 'method' (PUT, PATCH or DELETE)", out error);
                parsed.Add(new MessageWrite(kind, docId.GetString()!, w.TryGetProperty("json", out var json) ? json.GetRawText() : null));
            }
            messages.Add(new MessageWrites(id.GetString()!, parsed, !(m.TryGetProperty("recheck", out var recheck) && recheck.ValueKind == JsonValueKind.False)));
            i++;
        }
        return (ledger.GetString()!, messages);
    }

    public static void WriteResults(Utf8JsonWriter w, IReadOnlyList<MessageOutcome> outcomes)
    {
        w.WriteStartObject();
        w.WriteStartArray("results");
        foreach (var o in outcomes)
        {
            w.WriteStartObject();
            w.WriteString("message", o.MessageId);
            w.WriteString("result", JsonNamingPolicy.CamelCase.ConvertName(o.Result.ToString()));
            if (o.Reason is { } reason) w.WriteString("reason", reason);
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteEndObject();
    }

    public static List<MessageOutcome> ReadResults(JsonElement root) =>
        root.GetProperty("results").EnumerateArray().Select(r => new MessageOutcome(
            r.GetProperty("message").GetString()!,
            Enum.Parse<MessageWriteResult>(r.GetProperty("result").GetString()!, ignoreCase: true),
            r.TryGetProperty("reason", out var reason) ? reason.GetString() : null)).ToList();

    private static (string, List<MessageWrites>)? Fail(string message, out string? error)
    {
        error = message;
        return null;
    }
}
