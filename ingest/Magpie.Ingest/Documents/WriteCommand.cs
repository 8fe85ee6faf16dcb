using Microsoft.AspNetCore.JsonPatch.SystemTextJson;

namespace Magpie.Ingest.Documents;

public enum WriteMethod { Put, Patch, Delete }

/// <summary>
/// One write, already validated for shape (id rules, document is a JSON object, patch parsed).
/// <paramref name="Collection"/> overrides the collection derived from the document or id.
/// <paramref name="ParsedDepth"/>: a parser already read <paramref name="Document"/> whole as a well-formed JSON object nesting at
/// most this deep (a bulk body, an input-topic message), so the store checks only its text instead of reading it again.
/// </summary>
public sealed record WriteCommand(
    WriteMethod Method,
    string Id,
    byte[]? Document = null,
    JsonPatchDocument? Patch = null,
    long? IfMatch = null,
    string? Collection = null,
    int? ParsedDepth = null)
{
    public static WriteCommand Put(string id, byte[] document, long? ifMatch = null, string? collection = null, int? parsedDepth = null) =>
        new(WriteMethod.Put, id, document, null, ifMatch, collection, parsedDepth);

    public static WriteCommand Delete(string id, long? ifMatch = null) => new(WriteMethod.Delete, id, IfMatch: ifMatch);

    public static WriteCommand ApplyPatch(string id, JsonPatchDocument patch, long? ifMatch = null) =>
        new(WriteMethod.Patch, id, Patch: patch, IfMatch: ifMatch);
}

public enum WriteErrorKind { Conflict, NotFound, PatchFailed, Invalid }

public sealed record WriteError(WriteErrorKind Kind, string Message);

/// <summary>What happened to one command: the new etag, no etag (delete of an absent document), or an error.</summary>
public sealed record WriteOutcome(string Id, WriteMethod Method, long? Etag, bool Created, WriteError? Error)
{
    public bool Succeeded => Error is null;
}

/// <summary>Thrown by an all-or-nothing write when one command can't be applied; nothing was written.</summary>
public sealed class WriteRejectedException(int index, WriteOutcome outcome)
    : Exception($"command {index} ({outcome.Method} {outcome.Id}) was rejected: {outcome.Error!.Message}")
{
    public int Index { get; } = index;
    public WriteOutcome Outcome { get; } = outcome;
}
