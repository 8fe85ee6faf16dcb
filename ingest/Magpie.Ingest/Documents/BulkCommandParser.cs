using System.Runtime.InteropServices;
using System.Text.Json;
using Magpie.Contracts.Documents;

namespace Magpie.Ingest.Documents;

/// <summary>
/// Parses a <c>POST /bulk_docs</c> body: a JSON array of
/// <c>{ "method": "PUT"|"PATCH"|"DELETE", "id", "document"?, "patch"?, "etag"? }</c>.
/// Every problem names the command's index so a client can find it in a batch of hundreds.
/// </summary>
public static class BulkCommandParser
{
    /// <param name="raw">When given, receives each command's JSON text as sent (a partitioned store passes commands on to other owners).</param>
    public static IReadOnlyList<WriteCommand> Parse(ReadOnlyMemory<byte> body, int maxDepth, out string? error, List<string>? raw = null)
    {
        error = null;
        JsonDocument doc;
        try
        {
            // +2: the array and the command object sit above each document.
            doc = JsonDocument.Parse(body, new JsonDocumentOptions { MaxDepth = maxDepth + 2 });
        }
        catch (JsonException e)
        {
            error = DocumentJson.MalformedReason(e);
            return [];
        }
        using (doc)
        {
            var root = doc.RootElement;
            if (root.ValueKind != JsonValueKind.Array) { error = "the body must be a JSON array of commands"; return []; }
            var commands = new List<WriteCommand>(root.GetArrayLength());
            var i = 0;
            foreach (var item in root.EnumerateArray())
            {
                WriteCommand? command;
                string? reason;
                // Ids and methods are read as .NET strings: text that is not (invalid UTF-8, a lone surrogate) is refused here,
                // documents by the store, which checks every write's final bytes.
                try { command = ParseOne(item, maxDepth, out reason); }
                catch (InvalidOperationException) { (command, reason) = (null, "an id or method is not valid text (invalid UTF-8, or a \\u escape of a lone surrogate)"); }
                if (command is null) { error = $"command [{i}]: {reason}"; return []; }
                commands.Add(command);
                raw?.Add(item.GetRawText());
                i++;
            }
            if (commands.Count == 0) error = "the batch has no commands";
            return commands;
        }
    }

    private static WriteCommand? ParseOne(JsonElement item, int maxDepth, out string? reason)
    {
        reason = null;
        if (item.ValueKind != JsonValueKind.Object) { reason = "must be a JSON object"; return null; }
        if (!item.TryGetProperty("id", out var idElement) || idElement.ValueKind != JsonValueKind.String) { reason = "needs a string 'id'"; return null; }
        var id = idElement.GetString()!;
        if (DocumentId.Validate(id) is { } idError) { reason = idError; return null; }
        long? etag = null;
        if (item.TryGetProperty("etag", out var e) && e.ValueKind != JsonValueKind.Null)
        {
            if (e.ValueKind != JsonValueKind.Number || !e.TryGetInt64(out var v) || v <= 0) { reason = "'etag' must be a positive integer"; return null; }
            etag = v;
        }
        if (!item.TryGetProperty("method", out var m) || m.ValueKind != JsonValueKind.String) { reason = "needs a string 'method' (PUT, PATCH or DELETE)"; return null; }
        switch (m.GetString()!.ToUpperInvariant())
        {
            case "PUT":
                if (!item.TryGetProperty("document", out var d)) { reason = "PUT needs a 'document'"; return null; }
                if (d.ValueKind != JsonValueKind.Object) { reason = $"'document' must be a JSON object, not {d.ValueKind.ToString().ToLowerInvariant()}"; return null; }
                // Read whole by the parse above, within maxDepth (+2 counted the array and the command): the store checks only its text.
                return WriteCommand.Put(id, JsonMarshal.GetRawUtf8Value(d).ToArray(), etag, parsedDepth: maxDepth);
            case "PATCH":
                if (!item.TryGetProperty("patch", out var p)) { reason = "PATCH needs a 'patch' (a JSON Patch array)"; return null; }
                var patch = DocumentPatcher.Parse(JsonMarshal.GetRawUtf8Value(p), out var patchError, maxDepth);
                if (patch is null) { reason = patchError; return null; }
                return WriteCommand.ApplyPatch(id, patch, etag);
            case "DELETE":
                return WriteCommand.Delete(id, etag);
            case var other:
                reason = $"unknown method '{m.GetString()}' (expected PUT, PATCH or DELETE)";
                return null;
        }
    }
}
