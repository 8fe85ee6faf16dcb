using Magpie.Contracts.Changes;
using Magpie.Indexer.Engine;

namespace Magpie.Indexer.Indexing.Stages;

/// <summary>
/// What the worker still needs of a feed batch once it is mapped: how many changes, the newest etag, when the first was
/// written, the position after it. Not the documents: nothing after the map reads them, and a mapped batch waits for the
/// write loop and is written over a second or so, which would keep its parsed documents alive (and promoted) for nothing.
/// </summary>
public sealed record FeedRead(int Count, long MaxEtag, long SeenEtag, DateTimeOffset? FirstWritten, ChangeFeedPosition After)
{
    public static FeedRead Of(ChangeBatch batch)
    {
        var maxEtag = 0L;
        foreach (var change in batch.Changes) maxEtag = Math.Max(maxEtag, change.Etag);
        return new(batch.Changes.Count, maxEtag, batch.SeenEtag, batch.Changes.Count > 0 ? batch.Changes[0].LastModified : null, batch.After);
    }

    /// <summary>The newest etag the batch accounts for: its own changes' and, at the end of the feed, what the reader saw.</summary>
    public long LastEtag => Math.Max(MaxEtag, SeenEtag);
}

/// <summary>
/// A batch between the worker's two loops: what to delete and write in Lucene, and for map/reduce the changes per
/// reduce key (<see cref="Changes"/>). <see cref="Watermarks"/>: on the reduce side of Kafka mode, how far each source
/// partition's map stage had got when it sent this batch's changes.
/// </summary>
public sealed record MappedBatch(FeedRead Source, List<string> Deletes, List<IndexedDocument> Documents, int Entries)
{
    public List<MappedChange> Changes { get; init; } = [];
    public IReadOnlyDictionary<string, long>? Watermarks { get; init; }
    public double ReadMs { get; init; }
    public double MapMs { get; init; }
    public double ApplyMs { get; init; }
}

/// <summary>
/// What an index does with its feed's batches, for the <c>IndexWorker</c> that reads the feed, writes Lucene
/// and commits. <see cref="Map"/> runs on the worker's map loop; <see cref="ApplyAsync"/> on its write loop, so the
/// JavaScript maps of the next batch run while this one is reduced and written. One stage per attempt: a worker that
/// retries after a failure makes a new one and loads it again.
/// </summary>
public interface IIndexStage
{
    /// <summary>Batches the map loop may run ahead of the write loop.</summary>
    int MapAhead => 1;

    /// <summary>Before anything else, in the worker's retry loop (a failure is retried with back-off and shows in the status): e.g. create a topic.</summary>
    Task PrepareAsync(CancellationToken ct) => Task.CompletedTask;

    /// <summary>The index was opened at its last commit (not rebuilt): reload what the stage keeps beside the entries.</summary>
    Task LoadAsync(IIndexPersistence index, CancellationToken ct) => Task.CompletedTask;

    /// <summary>
    /// After the index is opened or rebuilt at <paramref name="position"/>, before the feed is read: a stage whose work another
    /// process may have carried further (the map side of Kafka mode, after its partition was owned elsewhere) brings its
    /// state and the index up to that point and returns where to read from (the worker commits it); null: read from <paramref name="position"/>.
    /// </summary>
    Task<ChangeFeedPosition?> CatchUpAsync(IIndexPersistence index, ChangeFeedPosition position, CancellationToken ct) => Task.FromResult<ChangeFeedPosition?>(null);

    MappedBatch Map(ChangeBatch batch);

    /// <summary>Turns the batch's mapped changes into Lucene writes (reduce) or hands them on (Kafka map side); plain maps pass it through.</summary>
    Task<MappedBatch> ApplyAsync(MappedBatch batch, CancellationToken ct) => Task.FromResult(batch);

    /// <summary>
    /// True when this index's results depend on every source partition, not just the worker's own shard (the reduce side
    /// of Kafka mode: any map stage may send it a key): staleness is then measured against <see cref="MappedBatch.Watermarks"/>.
    /// </summary>
    bool FedByAllPartitions => false;

    /// <summary>
    /// True when a commit must hold whole batches only: the stage keeps state beside its entries (reduce trees, a map stage's
    /// document → keys record) that a re-applied batch is compared against, and a commit running beside a batch's writes could
    /// catch half of them — state and results of one batch out of step after a crash. Plain maps replace whole entries on
    /// replay and let commits run beside writes.
    /// </summary>
    bool WholeBatchCommits => true;
}

/// <summary>
/// Where a stage records a document (or reduce key) it could not process: that document's error, not the index's.
/// Stages also count what they tried (<see cref="Attempted"/>), so the share that failed can mark the index errored.
/// </summary>
public interface IIndexErrors
{
    void Error(string documentId, string message);

    /// <summary><paramref name="count"/> more documents (or reduce keys) were mapped or reduced, failed ones included.</summary>
    void Attempted(int count);

    /// <summary>
    /// The document was deleted, or mapped without error now: what failed for it before no longer counts (a deleted document is
    /// never an error; a new index that reads the change feed from its start meets documents that failed and were deleted long
    /// before it was defined; a retried document that passes is fixed).
    /// </summary>
    void Cleared(string documentId);
}
