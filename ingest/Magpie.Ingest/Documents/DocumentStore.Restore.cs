using System.Buffers;
using Magpie.Contracts.Changes;

namespace Magpie.Ingest.Documents;

/// <summary>One change read back from the change topic: a version of a document as its owner wrote it, etag included.</summary>
public sealed record RestoredChange(ChangeOp Op, string Id, string Collection, long Etag, DateTimeOffset LastModified, byte[] Document);

/// <summary>A partition's store rebuilt from the compacted change topic when this process takes the partition over.</summary>
public sealed partial class DocumentStore
{
    /// <summary>
    /// Appends changes read back from <c>magpie.changes</c> with the etags their owner gave them, so etags stay monotonic across
    /// owners. A version older than the one held (a copy the relay sent again) is skipped; the newest etag seen becomes the
    /// store's last, so the next write continues after it. The relay must be moved past these entries: they are published already.
    /// </summary>
    public async Task RestoreAsync(IReadOnlyList<RestoredChange> changes, CancellationToken ct)
    {
        ObjectDisposedException.ThrowIf(_disposed != 0, this);
        long end;
        var entries = 0;
        await _writeLock.WaitAsync(ct);
        try
        {
            var buffer = new ArrayBufferWriter<byte>(4096);
            foreach (var change in changes)
            {
                if (change.Etag > _lastEtag) Interlocked.Exchange(ref _lastEtag, change.Etag);
                var held = await _index.TryGetAsync(change.Id);
                if (held is { } h && h.Etag >= change.Etag) continue;
                if (held is null && change.Op == ChangeOp.Delete) continue;
                buffer.ResetWrittenCount();
                ChangeRecord.Encode(buffer, change.Op, change.Etag, change.LastModified, change.Id, change.Collection, change.Document, held?.Address ?? 0);
                var address = _log.Enqueue(buffer.WrittenSpan);
                ApplyToIndex(change.Op, change.Id, change.Collection, change.Etag, address, held is { } before ? _collections.NameOf(before.CollectionId) : null);
                entries++;
            }
            end = StartCommit(entries);
        }
        finally
        {
            _writeLock.Release();
        }
        if (entries > 0) await AwaitCommitAsync(end, ct);
        Interlocked.Exchange(ref _committedEtag, LastEtag);
    }
}
