using System.Runtime.CompilerServices;
using System.Text.Json;
using Magpie.Contracts.Changes;

namespace Magpie.Ingest.Changes;

/// <summary>The change feed of the embedded target: the committed FasterLog itself, position = log address.</summary>
public sealed class EmbeddedChangeFeed(ChangeLogTail tail) : IChangeFeed
{
    public const string PositionKey = "log";

    public async IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        var start = from.Next.TryGetValue(PositionKey, out var a) ? a : tail.BeginAddress;
        await foreach (var entries in tail.ReadAsync(start, maxBatchSize, cancellationToken))
        {
            var changes = new List<ChangeEvent>(entries.Count);
            foreach (var entry in entries) changes.Add(ToChange(entry));
            yield return new ChangeBatch(changes, new ChangeFeedPosition(new Dictionary<string, long> { [PositionKey] = entries[^1].NextAddress }));
        }
    }

    /// <summary>Etags grow by one per write, so the distance to the newest etag is the number of changes still to come.</summary>
    public long? Backlog(ChangeFeedPosition position, long lastEtag) => Math.Max(0, tail.LastEtag - lastEtag);

    private static ChangeEvent ToChange(LogEntry entry)
    {
        var r = entry.Decode();
        JsonElement? document = r.Op == ChangeOp.Put ? JsonDocument.Parse(r.Document.ToArray()).RootElement : null;
        return new ChangeEvent(r.Id, r.Collection, r.Etag, r.Op, r.LastModified, document);
    }
}
