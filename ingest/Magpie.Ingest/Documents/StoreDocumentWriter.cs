using System.Text;
using Magpie.Contracts.Documents;

namespace Magpie.Ingest.Documents;

/// <summary>The store as a set-based operation in the same process writes to it: each write guarded by its etag, standing alone.</summary>
public sealed class StoreDocumentWriter(DocumentStore store) : IDocumentWriter
{
    public async Task<IReadOnlyList<GuardedOutcome>> WriteAsync(IReadOnlyList<GuardedWrite> writes, CancellationToken ct = default)
    {
        var commands = writes.Select(w => w.Json is { } json
            ? WriteCommand.Put(w.Id, Encoding.UTF8.GetBytes(json), w.IfMatch)
            : WriteCommand.Delete(w.Id, w.IfMatch)).ToList();
        var outcomes = await store.WriteAsync(commands, atomic: false, ct);
        return outcomes.Select(o => o.Error switch
        {
            null => new GuardedOutcome(o.Id, GuardedWriteResult.Written, o.Etag),
            { Kind: WriteErrorKind.Conflict } => new GuardedOutcome(o.Id, GuardedWriteResult.Changed, Reason: o.Error.Message),
            { Kind: WriteErrorKind.NotFound } => new GuardedOutcome(o.Id, GuardedWriteResult.Missing, Reason: o.Error.Message),
            var e => new GuardedOutcome(o.Id, GuardedWriteResult.Refused, Reason: e.Message),
        }).ToList();
    }
}
