using System.Buffers;
using Magpie.Contracts.Changes;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Documents;

/// <summary>How many versions of a document the change log keeps once compacted: the latest always, older ones up to <see cref="Revisions"/> in all and no older than <see cref="For"/>.</summary>
public sealed record RevisionRetention(int Revisions = 1, TimeSpan? For = null);

/// <summary>
/// What one compaction pass did: documents whose kept versions were copied forward, and the address a reader must pass to be
/// past the copies; for a skipped pass, how much of the prefix it found kept (<paramref name="LiveBytes"/>) and reclaimable.
/// </summary>
public sealed record CompactionPass(long Until, int Documents, int Versions, long CopiedBytes, long CopiesEnd, bool Skipped = false,
    long LiveBytes = 0, long DeadBytes = 0);

/// <summary>
/// Compaction of the change log. FasterLog only drops a prefix, so versions still kept in the prefix [begin, until) —
/// the latest of each live document, and older revisions within the retention — are copied forward to the tail (same
/// bytes, etag and time; <see cref="ChangeRecord.CopyOf"/> names the entry copied), the id index is pointed at the copies,
/// and the prefix is truncated once every change reader has durably read past the copies (<see cref="TruncateUntilAsync"/>).
/// A reader skips a copy while the entry it copies is still in the log (it has read it, or will); a reader that starts after
/// the truncation reads the copies instead. Deletes and superseded versions in the prefix are simply dropped.
/// </summary>
public sealed partial class DocumentStore
{
    /// <summary>Documents copied per hold of the write lock: writers wait at most one such chunk.</summary>
    private const int CompactionChunk = 256;

    public long LogBeginAddress => _log.BeginAddress;

    public long LogTailAddress => _log.TailAddress;

    /// <summary>
    /// Copies forward what <paramref name="retention"/> keeps of [begin, <paramref name="until"/>) and checkpoints the id index;
    /// skipped (nothing copied) unless the prefix holds at least <paramref name="minDeadBytes"/> of superseded versions and
    /// deletes, and no less of them than of versions to keep — else each pass would copy the last pass's copies again.
    /// </summary>
    public async Task<CompactionPass> CompactAsync(long until, RevisionRetention retention, long minDeadBytes = 1, CancellationToken ct = default)
    {
        ObjectDisposedException.ThrowIf(_disposed != 0, this);
        until = Math.Min(until, _log.CommittedUntilAddress);
        var candidates = new List<string>();
        var seen = new HashSet<string>(StringComparer.Ordinal);
        long live = 0, dead = 0;
        using (var iter = _log.Scan(_log.BeginAddress, until))
        {
            while (iter.GetNext(out byte[] entry, out var length, out var address, out _))
            {
                ct.ThrowIfCancellationRequested();
                var span = entry.AsSpan(0, length);
                if (ChangeRecord.IsBookkeeping(span)) { dead += length; continue; }
                var (op, id, _, _) = Header(span);
                if (op == ChangeOp.Delete) { dead += length; continue; }
                // Kept for sure: the latest version, and revisions an earlier pass kept. Older originals count as reclaimable.
                var kept = ChangeRecord.IsRevision(span) || await _index.TryGetAsync(id) is { } head && head.Address == address;
                if (kept) live += length; else dead += length;
                if (seen.Add(id)) candidates.Add(id);
            }
        }
        if (dead < Math.Max(1, minDeadBytes) || dead < live)
            return new CompactionPass(until, 0, 0, 0, until, Skipped: true, LiveBytes: live, DeadBytes: dead);
        int documents = 0, versions = 0;
        long bytes = 0, lastCopy = -1;
        var buffer = new ArrayBufferWriter<byte>(4096);
        foreach (var chunk in candidates.Chunk(CompactionChunk))
        {
            // The versions to keep are read before taking the write lock (random reads of the prefix); under it, a document
            // whose latest version moved meanwhile is looked at again, the rest are only appended.
            var prepared = new List<(string Id, long Head, List<(long Address, byte[] Entry)> Kept)>(chunk.Length);
            foreach (var id in chunk)
                if (await _index.TryGetAsync(id) is { } head && !(retention.Revisions <= 1 && head.Address >= until))   // latest only, written since: keeps nothing here
                    prepared.Add((id, head.Address, await KeptVersionsAsync(head.Address, retention)));
            await _writeLock.WaitAsync(ct);
            try
            {
                foreach (var (id, preparedHead, preparedKept) in prepared)
                {
                    if (await _index.TryGetAsync(id) is not { } head) continue;   // deleted since: nothing to keep
                    if (retention.Revisions <= 1 && head.Address >= until) continue;
                    var kept = head.Address == preparedHead ? preparedKept : await KeptVersionsAsync(head.Address, retention);
                    if (kept.All(v => v.Address >= until)) continue;             // nothing kept lies in the prefix
                    var previous = 0L;
                    for (var i = kept.Count - 1; i >= 0; i--)
                    {
                        var (address, entry) = kept[i];
                        var r = ChangeRecord.Decode(entry);
                        buffer.ResetWrittenCount();
                        var op = i == 0 ? r.Op : (ChangeOp)ChangeRecord.RevisionOp;
                        ChangeRecord.Encode(buffer, op, r.Etag, r.LastModified, r.Id, r.Collection, r.Document, previous, copyOf: address);
                        previous = lastCopy = _log.Enqueue(buffer.WrittenSpan);
                        bytes += buffer.WrittenCount;
                        versions++;
                    }
                    _index.Upsert(id, head with { Address = previous });
                    documents++;
                }
                _writesSinceCheckpoint += 1;
                _log.Commit(spinWait: false);
            }
            finally { _writeLock.Release(); }
        }
        await _log.CommitAsync(token: ct);
        // A reader is past the copies once its position lies beyond the last one (positions are the address after an
        // entry; the log's tail itself may lie further, past commit records no reader ever reaches).
        var end = lastCopy >= 0 ? lastCopy + 1 : until;
        if (documents > 0) await CheckpointAsync();
        _logger.LogInformation("change log compaction up to {Until}: {Documents} documents ({Versions} versions, {Bytes} bytes) copied forward", until, documents, versions, bytes);
        return new CompactionPass(until, documents, versions, bytes, end);
    }

    /// <summary>The versions <paramref name="retention"/> keeps, newest first, following the chain from the latest at <paramref name="head"/>.</summary>
    private async Task<List<(long Address, byte[] Entry)>> KeptVersionsAsync(long head, RevisionRetention retention)
    {
        var kept = new List<(long, byte[])>();
        var oldest = retention.For is { } span ? _clock.GetUtcNow() - span : DateTimeOffset.MinValue;
        await foreach (var (address, entry) in ChainAsync(head, CancellationToken.None))
        {
            if (kept.Count == Math.Max(1, retention.Revisions) || kept.Count > 0 && ChangeRecord.Decode(entry).LastModified < oldest) break;
            kept.Add((address, entry));
        }
        return kept;
    }

    /// <summary>A document's versions still in the log, newest first, from the entry at <paramref name="head"/> back along <see cref="ChangeRecord.Previous"/>.</summary>
    private async IAsyncEnumerable<(long Address, byte[] Entry)> ChainAsync(long head, [System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken ct)
    {
        for (var address = head; address > 0 && address >= _log.BeginAddress;)
        {
            var entry = await ReadEntryAsync(address, ct);
            yield return (address, entry);
            address = ChangeRecord.Decode(entry).Previous;
        }
    }

    /// <summary>Drops the log before <paramref name="until"/> (whole segment files are deleted once nothing reads them).</summary>
    public async Task TruncateUntilAsync(long until)
    {
        ObjectDisposedException.ThrowIf(_disposed != 0, this);
        if (until <= _log.BeginAddress) return;
        await _writeLock.WaitAsync();
        try
        {
            _log.TruncateUntil(until);
            await _log.CommitAsync();
        }
        finally { _writeLock.Release(); }
        _logger.LogInformation("change log truncated before {Until}", until);
    }

    /// <summary>
    /// The versions of <paramref name="id"/> still in the log, newest first (at most <paramref name="max"/>); empty when the
    /// document does not exist. How many there are depends on the retention and on when compaction last ran.
    /// </summary>
    public async Task<IReadOnlyList<StoredDocument>> RevisionsAsync(string id, int max, CancellationToken ct = default)
    {
        var versions = new List<StoredDocument>();
        if (await _index.TryGetAsync(id) is not { } head) return versions;
        await foreach (var (_, entry) in ChainAsync(head.Address, ct))
        {
            if (versions.Count == max) break;
            versions.Add(ToStored(ChangeRecord.Decode(entry)));   // the chain starts at a live document: no deletes in it
        }
        return versions;
    }
}
