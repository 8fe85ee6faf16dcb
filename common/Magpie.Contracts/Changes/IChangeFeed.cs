namespace Magpie.Contracts.Changes;

/// <summary>
/// Where a reader of the change feed has got to: one next-position per source partition
/// (embedded: the single key <c>"log"</c> → FasterLog address; Kafka: partition number → next offset).
/// Readers persist it beside whatever they built from the changes and resume from it.
/// </summary>
public sealed record ChangeFeedPosition(IReadOnlyDictionary<string, long> Next)
{
    public static ChangeFeedPosition Beginning { get; } = new(new Dictionary<string, long>());
}

/// <summary>
/// A batch of committed changes and the position just after them. <see cref="SeenEtag"/>: when the batch reached the end of
/// the feed, the newest etag the reader has now accounted for — deletes compaction dropped included (0: only the batch's own).
/// </summary>
public sealed record ChangeBatch(IReadOnlyList<ChangeEvent> Changes, ChangeFeedPosition After)
{
    public long SeenEtag { get; init; }

    /// <summary>
    /// Ids of documents changed on other shards of the feed (Kafka mode, an index whose maps <c>load()</c>: the documents a map
    /// loaded may live on any partition). Not this shard's changes: nothing indexes them here, their referrers are mapped again.
    /// </summary>
    public IReadOnlyList<string> ChangedElsewhere { get; init; } = [];
}

/// <summary>
/// The stream of committed changes, in etag order per document. Two implementations: the embedded one
/// tails the committed FasterLog; the Kafka one consumes <c>magpie.changes</c>.
/// </summary>
public interface IChangeFeed
{
    /// <summary>Reads batches from <paramref name="from"/> onwards, waiting for new changes at the tail, until cancelled.</summary>
    IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize, CancellationToken cancellationToken);

    /// <summary>
    /// How many changes are still to come for a reader at <paramref name="position"/> whose last change had
    /// <paramref name="lastEtag"/>; null when the feed can't tell without asking a broker. Cheap: for stats.
    /// </summary>
    long? Backlog(ChangeFeedPosition position, long lastEtag) => null;

    /// <summary>
    /// An empty batch at the end of the feed: its position is just past every change committed so far (where a reader that
    /// wants only what comes next starts), its <see cref="ChangeBatch.SeenEtag"/> the newest etag among them where the feed
    /// knows it. Null when the feed can't tell.
    /// </summary>
    Task<ChangeBatch?> EndAsync(CancellationToken cancellationToken) => Task.FromResult<ChangeBatch?>(null);

    /// <summary>
    /// Registers a reader that resumes from a position it persists (<paramref name="durable"/>: where it would resume after
    /// a crash) until the handle is disposed. The embedded feed reclaims only changes every registered reader has passed;
    /// Kafka keeps its own retention, so there it does nothing.
    /// </summary>
    IDisposable Track(string reader, Func<ChangeFeedPosition> durable) => NotTracked.Instance;

    /// <summary>
    /// False when changes between <paramref name="position"/> and now are no longer all there (the log was compacted past
    /// an unregistered reader): a reader that must see every delete then starts over from the beginning.
    /// </summary>
    bool CanResume(ChangeFeedPosition position) => true;

    private sealed class NotTracked : IDisposable
    {
        public static readonly NotTracked Instance = new();
        public void Dispose() { }
    }
}
