using Magpie.Contracts.Changes;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Indexing.Stages;
using Magpie.Indexer.Engine;
using Magpie.Scripting;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// Kafka mode, map side of a map/reduce index on one <c>magpie.changes</c> partition: maps each batch, publishes the
/// changes per reduce key to the index's mapped topic (one transaction per batch, committed before the worker moves on), and keeps in its own
/// small Lucene index which keys each document contributes to — committed with the consumed offsets, so after a crash
/// it resumes from there. When the published progress got further than that commit (this stage's own transactions
/// committed before its local commit, or the partition moved while this one was down, or it never had it), that record is
/// rebuilt from the mapped topic instead and the stage resumes where the other left off: a document that changes key
/// later is then taken out of the key the reducers hold it under, not one this process last saw. After a reset
/// (<paramref name="remap"/>) the record is rebuilt the same way but every document is mapped again from the start.
/// Each attempt publishes through its own <see cref="MappedPublisher"/>, opened before the published position is read: it
/// fences every earlier publisher of this partition, so what the topic holds is exactly what the progress says, and a
/// local record behind it is always caught up from the topic.
/// </summary>
/// <remarks>Maps that <c>load()</c> (<paramref name="lookup"/>: the store through an ingest process) read a feed that follows every
/// partition's changes too (<c>Maps/LoadFollowingFeed</c>), keep what each document loaded as state entries in the same small
/// index, and put how far they followed each partition in their watermarks. A record taken over from the topic does not say
/// what documents loaded, so such a stage then maps every document of its partition again from the start.</remarks>
public sealed class MappedTopicStage(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, MappedTopics topics, string topic, int shard,
    bool remap = false, IDocumentLookup? lookup = null) : IIndexStage, IDisposable
{
    private MapToKeys _map = new(definition, limits, status, lookup);
    private MappedPublisher? _publisher;

    public async Task PrepareAsync(CancellationToken ct)
    {
        await topics.EnsureAsync(topic, ct);
        _publisher = await topics.OpenPublisherAsync(topic, shard, ct);
    }

    public async Task LoadAsync(IIndexPersistence index, CancellationToken ct)
    {
        foreach (var entry in index.ScanState()) _map.Load(entry);
    }

    public async Task<ChangeFeedPosition?> CatchUpAsync(IIndexPersistence index, ChangeFeedPosition position, CancellationToken ct)
    {
        var here = position.Next.GetValueOrDefault(shard.ToString());
        if (await topics.PublishedAsync(topic, shard, ct) is not { } published || published <= here) return null;
        // A reset maps every document again, from the record the reducers hold (so what it no longer maps to is taken out); so
        // does a map that loads, whose references the topic does not hold.
        if (remap && here == 0 || _map.Loads) published = 0;
        var keysOf = await topics.RestoreAsync(topic, shard, ct);
        _map = new MapToKeys(definition, limits, status, lookup);
        await index.DeleteAllAsync(ct);
        var entries = keysOf.SelectMany(d => d.Value.Select(key => new StateEntry(key, d.Key, null)));
        foreach (var chunk in entries.Chunk(4096))
        {
            foreach (var entry in chunk) _map.Load(entry);
            await index.WriteAsync([], chunk.Select(e => e.ToDocument()).ToList(), ct);
        }
        // Every partition's changes are followed afresh (from their end now) when every document is mapped again.
        var resumed = position.Next.Where(p => published > 0 || !p.Key.StartsWith(Maps.LoadFollowingFeed.Prefix, StringComparison.Ordinal)).ToDictionary();
        return new ChangeFeedPosition(new Dictionary<string, long>(resumed) { [shard.ToString()] = published });
    }

    /// <summary>The mapped changes, and what documents loaded as this index's writes (state entries to write and to delete).</summary>
    public MappedBatch Map(ChangeBatch batch)
    {
        var (state, stateDeletes) = (new List<IndexedDocument>(), new List<string>());
        return new(FeedRead.Of(batch), stateDeletes, state, 0) { Changes = _map.Map(batch, state, stateDeletes) };
    }

    public async Task<MappedBatch> ApplyAsync(MappedBatch batch, CancellationToken ct)
    {
        var next = batch.Source.After.Next.GetValueOrDefault(shard.ToString());
        var publisher = _publisher ?? throw new InvalidOperationException("the map stage publishes only after PrepareAsync");
        var followed = Maps.LoadFollowingFeed.Followed(batch.Source.After).Next;
        await publisher.PublishAsync(batch.Changes, batch.Source.MaxEtag, next, ct, followed);
        var deletes = batch.Deletes;
        var documents = batch.Documents;
        foreach (var change in batch.Changes)
            if (change.Removes) deletes.Add(StateEntry.IdOf(change.Key, change.Source));
            else documents.Add(new StateEntry(change.Key, change.Source, null).ToDocument());
        return batch with { Deletes = deletes, Documents = documents, Entries = batch.Changes.Count };
    }

    public void Dispose() => _publisher?.Dispose();
}

/// <summary>
/// Kafka mode, reduce side: reads partition <c>shard</c> of the mapped topic (the reduce keys this indexer owns),
/// applies the changes to the reduce trees and writes results and state to the shard's Lucene index, committed with the
/// mapped topic's offset and the map stages' watermarks. Fed by every source partition's map stage.
/// </summary>
public sealed class TopicReduceStage(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, IDocumentOutput? documents,
    MappedTopics topics, string topic, string? handover = null) : IIndexStage
{
    public Task PrepareAsync(CancellationToken ct) => topics.EnsureAsync(topic, ct);

    private readonly ReduceWriter _reduce = new(definition, limits, status, documents, handover);

    public int MapAhead => 4;

    public bool FedByAllPartitions => true;

    public async Task LoadAsync(IIndexPersistence index, CancellationToken ct)
    {
        foreach (var entry in index.ScanState())
            if (entry.Key != Maps.DocumentReferences.Key) _reduce.State.Load(entry);
        _reduce.State.Loaded();
        await _reduce.HandOverAsync(ct);
    }

    public MappedBatch Map(ChangeBatch batch)
    {
        var watermarks = new Dictionary<string, long>();
        var changes = new List<MappedChange>(batch.Changes.Count);
        foreach (var e in batch.Changes)
            if (MappedTopics.Parse(e, watermarks) is { } change) changes.Add(change);
        return new MappedBatch(FeedRead.Of(batch), [], [], 0) { Changes = changes, Watermarks = watermarks };
    }

    public Task<MappedBatch> ApplyAsync(MappedBatch batch, CancellationToken ct) => _reduce.ApplyAsync(batch, ct);
}
