namespace Magpie.Contracts.Documents;

public enum MessageWriteMethod { Put, Patch, Delete }

/// <summary>One write a queue sink's script asked for: a document to put (JSON object), a JSON Patch array to apply, or a delete.</summary>
public sealed record MessageWrite(MessageWriteMethod Method, string Id, string? Json = null);

/// <summary>
/// Everything one message asked for, under the message's id (what makes a redelivery recognisable). <paramref name="Recheck"/>
/// false: the broker says this is a first delivery of a message identified only by its content, so the ledger is not asked (two
/// equal messages are two messages), only told.
/// </summary>
public sealed record MessageWrites(string MessageId, IReadOnlyList<MessageWrite> Writes, bool Recheck = true);

public enum MessageWriteResult { Applied, AlreadyApplied, Refused }

/// <summary>What happened to one message's writes: applied, applied before (a redelivery, skipped), or refused by the store (why, and which write).</summary>
public sealed record MessageOutcome(string MessageId, MessageWriteResult Result, string? Reason = null);

/// <summary>
/// Applies what queue sinks make of messages (<c>PUT /sinks/{name}</c>): each message's writes all or nothing, each message at
/// most once per ledger (the message id is recorded in the commit that holds its writes), returning once they are durable. The
/// store itself when ingest runs in the same process, else the ingest process over HTTP (<c>POST /message_writes</c>).
/// </summary>
public interface IMessageWriter
{
    Task<IReadOnlyList<MessageOutcome>> WriteAsync(string ledger, IReadOnlyList<MessageWrites> messages, CancellationToken ct = default);
}
