using System.Runtime.CompilerServices;
using System.Text.Json;
using Magpie.Contracts.Changes;

namespace Magpie.Ingest.Changes;

/// <summary>The change feed of the embedded target: the committed FasterLog itself, position = log address.</summary>
public sealed class EmbeddedChangeFeed(ChangeLogTail tail, ChangeLogReaders readers) : IChangeFeed
{
    public const string PositionKey = "log";

    public static long AddressOf(ChangeFeedPosition position) => position.Next.TryGetValue(PositionKey, out var a) ? a : 0;

    public IDisposable Track(string reader, Func<ChangeFeedPosition> durable) => readers.Track(reader, () => AddressOf(durable()));

    public bool CanResume(ChangeFeedPosition position) => AddressOf(position) is var a && (a == 0 || a >= tail.BeginAddress);

    /// <summary>
    /// A write is acknowledged after its commit, so every acknowledged change lies before the committed address. The etag is
    /// read first: a commit landing in between makes the reader look one change behind, never ahead.
    /// </summary>
    public Task<ChangeBatch?> EndAsync(CancellationToken cancellationToken)
    {
        var etag = tail.CommittedEtag;
        return Task.FromResult<ChangeBatch?>(new ChangeBatch([], new ChangeFeedPosition(new Dictionary<string, long> { [PositionKey] = tail.CommittedAddress })) { SeenEtag = etag });
    }

    public async IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        var start = from.Next.TryGetValue(PositionKey, out var a) ? a : tail.BeginAddress;
        await foreach (var batch in tail.ReadAsync(start, maxBatchSize, cancellationToken))
        {
            var changes = new List<ChangeEvent>(batch.Entries.Count);
            foreach (var entry in batch.Entries) changes.Add(ToChange(entry));
            yield return new ChangeBatch(changes, new ChangeFeedPosition(new Dictionary<string, long> { [PositionKey] = batch.NextAddress })) { SeenEtag = batch.CaughtUpEtag };
        }
    }

    /// <summary>Etags grow by one per write, so the distance to the newest etag is the number of changes still to come.</summary>
    public long? Backlog(ChangeFeedPosition position, long lastEtag) => Math.Max(0, tail.LastEtag - lastEtag);

    private static ChangeEvent ToChange(LogEntry entry)
    {
        var r = entry.Decode();
        JsonElement? document = null;
        if (r.Op == ChangeOp.Put)
        {
            // Parsed in place: the entry's array is the log reader's own copy (a new one per entry, never reused), so the
            // document can keep referring to it instead of to a second copy of its bytes (an empty span overlaps nothing).
            document = entry.Bytes.AsSpan(0, entry.Length).Overlaps(r.Document, out var offset)
                ? JsonDocument.Parse(entry.Bytes.AsMemory(offset, r.Document.Length)).RootElement
                : JsonDocument.Parse(r.Document.ToArray()).RootElement;
        }
        return new ChangeEvent(r.Id, r.Collection, r.Etag, r.Op, r.LastModified, document);
    }
}
