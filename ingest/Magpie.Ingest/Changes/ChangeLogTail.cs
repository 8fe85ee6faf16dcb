using System.Runtime.CompilerServices;
using Magpie.Ingest.Documents;

namespace Magpie.Ingest.Changes;

/// <summary>Committed change-log entries and the address after the last entry read (where a reader resumes); empty when all that was read were copies the reader skips.</summary>
/// <see cref="CaughtUpEtag"/>: when the read reached the end of the committed log, every etag up to it was read or compacted away.
public sealed record LogBatch(IReadOnlyList<LogEntry> Entries, long NextAddress, long CaughtUpEtag = 0);

/// <summary>One committed change-log entry and the address just after it (where a reader resumes).</summary>
public sealed record LogEntry(byte[] Bytes, int Length, long Address, long NextAddress)
{
    public ChangeRecord Decode() => ChangeRecord.Decode(Bytes.AsSpan(0, Length));
}

/// <summary>
/// Tails the committed change log in batches: everything available now, up to a size, then waits. Bookkeeping entries are
/// left out, and so are versions compaction copied forward while the entry they copy is still in the log: the reader
/// has read that entry already, or will (see <c>DocumentStore.Compaction</c>).
/// </summary>
public sealed class ChangeLogTail(DocumentStore store)
{
    public long BeginAddress => store.Log.BeginAddress;

    /// <summary>The address just past the last committed entry, and the newest etag committed.</summary>
    public long CommittedAddress => store.Log.CommittedUntilAddress;
    public long CommittedEtag => store.CommittedEtag;

    /// <summary>The newest etag written (a reader that has passed it is caught up).</summary>
    public long LastEtag => store.LastEtag;

    public async IAsyncEnumerable<LogBatch> ReadAsync(long from, int maxBatch, [EnumeratorCancellation] CancellationToken ct)
    {
        using var iter = store.Log.Scan(Math.Max(from, store.Log.BeginAddress), long.MaxValue);
        while (!ct.IsCancellationRequested)
        {
            var batch = new List<LogEntry>();
            long read = 0, skipped = 0;
            var committed = store.CommittedEtag;   // before the scan: all of these are visible to it
            var atEnd = false;
            while (batch.Count < maxBatch && skipped < maxBatch * 16L)
            {
                if (!iter.GetNext(out byte[] bytes, out var length, out var address, out var next)) { atEnd = true; break; }
                read = next;
                if (IsChange(bytes.AsSpan(0, length))) batch.Add(new LogEntry(bytes, length, address, next));
                else if (!ChangeRecord.IsBookkeeping(bytes.AsSpan(0, length))) skipped++;
            }
            // A stretch of skipped copies still moves the reader on (an empty batch), so compaction sees it pass them.
            if (batch.Count > 0 || skipped > 0) { yield return new LogBatch(batch, read, atEnd ? committed : 0); continue; }
            if (!await iter.WaitAsync(ct)) yield break;
        }
    }

    private bool IsChange(ReadOnlySpan<byte> entry) =>
        !ChangeRecord.IsBookkeeping(entry) && !ChangeRecord.IsRevision(entry) && ChangeRecord.CopyOfAddress(entry) is var copyOf
        && (copyOf == 0 || copyOf < store.Log.BeginAddress);
}
