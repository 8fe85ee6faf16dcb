namespace Magpie.Contracts.Documents;

/// <summary>
/// One write of a set-based operation: the document's new JSON (null: delete it), guarded by the etag it was read at, so a
/// document changed meanwhile is never overwritten blind.
/// </summary>
public sealed record GuardedWrite(string Id, string? Json, long IfMatch);

public enum GuardedWriteResult { Written, Changed, Missing, Refused }

/// <summary>What happened to one guarded write: written (its new etag), the document changed since it was read, it is gone, or refused (why).</summary>
public sealed record GuardedOutcome(string Id, GuardedWriteResult Result, long? Etag = null, string? Reason = null);

/// <summary>
/// Writes documents through the store's write path (the same checks and durability as <c>POST /bulk_docs</c>): the store itself
/// when ingest runs in the same process, else the ingest process over HTTP. Each write stands alone; returns once they are durable.
/// </summary>
public interface IDocumentWriter
{
    Task<IReadOnlyList<GuardedOutcome>> WriteAsync(IReadOnlyList<GuardedWrite> writes, CancellationToken ct = default);
}
