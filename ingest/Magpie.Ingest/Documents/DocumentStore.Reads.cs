using Magpie.Contracts.Changes;

namespace Magpie.Ingest.Documents;

/// <summary>Reads: a document by id (waiting for its group commit if needed) and browsing in etag order.</summary>
public sealed partial class DocumentStore
{
    public async Task<StoredDocument?> GetAsync(string id, CancellationToken ct = default)
    {
        if (await _index.TryGetAsync(id) is not { } pointer) return null;
        return ToStored(ChangeRecord.Decode(await ReadEntryAsync(pointer.Address, ct)));
    }

    /// <summary>The etag of a document's latest version, without reading it (<c>HEAD</c>); null when absent. Visible once committed, as a GET is.</summary>
    public async Task<long?> EtagOfAsync(string id, CancellationToken ct = default)
    {
        if (await _index.TryGetAsync(id) is not { } pointer) return null;
        if (pointer.Address >= _log.CommittedUntilAddress) await _log.WaitForCommitAsync(pointer.Address + 1, token: ct);
        return pointer.Etag;
    }

    /// <summary>
    /// Latest versions in log order (etag order until a compaction moves a version forward), optionally of one collection, resuming after a cursor (a log address
    /// from a previous page). <paramref name="skip"/> skips matching documents first (RavenDB's `start`).
    /// </summary>
    public async Task<BrowsePage> BrowseAsync(string? collection, int skip, int pageSize, long cursor, CancellationToken ct = default)
    {
        var results = new List<StoredDocument>(Math.Min(pageSize, 1024));
        var from = Math.Max(cursor, _log.BeginAddress);
        using var iter = _log.Scan(from, _log.CommittedUntilAddress);
        long next = from;
        var exhausted = false;
        while (results.Count < pageSize && !ct.IsCancellationRequested)
        {
            // The end of the scan, not an address comparison, says there is no more: with FastCommitMode
            // the log's committed tail lies past the last document entry (commit records live in the log).
            if (!iter.GetNext(out byte[] entry, out var length, out var address, out var nextAddress)) { exhausted = true; break; }
            next = nextAddress;
            if (BrowseCandidate(entry.AsSpan(0, length), collection) is not { } doc) continue;
            // Only the entry the id index points at counts: older versions are history, and a version compaction copied
            // forward is listed where its copy is (same etag), not twice.
            if (await _index.TryGetAsync(doc.Id) is not { } p || p.Address != address) continue;
            if (skip > 0) { skip--; continue; }
            results.Add(doc);
        }
        var more = !exhausted;
        return new BrowsePage(results, more ? next : null);
    }

    private static StoredDocument? BrowseCandidate(ReadOnlySpan<byte> entry, string? collection)
    {
        if (ChangeRecord.IsBookkeeping(entry)) return null;
        var record = ChangeRecord.Decode(entry);
        if (record.Op != ChangeOp.Put) return null;
        if (collection is not null && !string.Equals(record.Collection, collection, StringComparison.OrdinalIgnoreCase)) return null;
        return ToStored(record);
    }

    private static StoredDocument ToStored(ChangeRecord record) =>
        new(record.Id, record.Collection, record.Etag, record.LastModified, record.Document.ToArray());

    private async Task<byte[]> ReadDocumentAsync(long address)
    {
        var entry = await ReadEntryAsync(address, CancellationToken.None);
        return ChangeRecord.Decode(entry).Document.ToArray();
    }

    private async Task<byte[]> ReadEntryAsync(long address, CancellationToken ct)
    {
        // FasterLog reads only committed entries. The writer of this entry already asked for the commit
        // that covers it (under the write lock), so a reader only has to wait for it.
        if (address >= _log.CommittedUntilAddress) await _log.WaitForCommitAsync(address + 1, token: ct);
        var (entry, length) = await _log.ReadAsync(address, token: ct);
        if (entry is null) throw new InvalidDataException($"change log entry at {address} could not be read");
        return length == entry.Length ? entry : entry.AsSpan(0, length).ToArray();
    }
}
