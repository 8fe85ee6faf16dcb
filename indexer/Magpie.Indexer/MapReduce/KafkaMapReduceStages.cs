using Magpie.Contracts.Changes;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Indexing.Stages;
using Magpie.Indexer.Engine;
using Magpie.Scripting;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// Kafka mode, map side of a map/reduce index on one <c>magpie.changes</c> partition: maps each batch, publishes the
/// changes per reduce key to the index's mapped topic (acknowledged before the worker moves on), and keeps in its own
/// small Lucene index which keys each document contributes to — committed with the consumed offsets, so after a crash
/// it re-publishes from there (the reduce side applies a pair's change idempotently).
/// </summary>
public sealed class MappedTopicStage(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, MappedTopics topics, string topic, int shard)
    : IIndexStage
{
    private readonly MapToKeys _map = new(definition, limits, status);

    public Task PrepareAsync(CancellationToken ct) => topics.EnsureAsync(topic, ct);

    public async Task LoadAsync(IIndexPersistence index, CancellationToken ct)
    {
        foreach (var entry in index.ScanState()) _map.Load(entry);
    }

    public MappedBatch Map(ChangeBatch batch) => new(batch, [], [], 0) { Changes = _map.Map(batch) };

    public async Task<MappedBatch> ApplyAsync(MappedBatch batch, CancellationToken ct)
    {
        var next = batch.Source.After.Next.GetValueOrDefault(shard.ToString());
        await topics.PublishAsync(topic, batch.Changes, batch.Source.Changes.Max(c => c.Etag), shard, next, ct);
        var deletes = new List<string>();
        var documents = new List<IndexedDocument>();
        foreach (var change in batch.Changes)
            if (change.Removes) deletes.Add(StateEntry.IdOf(change.Key, change.Source));
            else documents.Add(new StateEntry(change.Key, change.Source, null).ToDocument());
        return batch with { Deletes = deletes, Documents = documents, Entries = batch.Changes.Count };
    }
}

/// <summary>
/// Kafka mode, reduce side: reads partition <c>shard</c> of the mapped topic (the reduce keys this indexer owns),
/// applies the changes to the reduce trees and writes results and state to the shard's Lucene index, committed with the
/// mapped topic's offset and the map stages' watermarks. Fed by every source partition's map stage.
/// </summary>
public sealed class TopicReduceStage(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, IDocumentOutput? documents,
    MappedTopics topics, string topic) : IIndexStage
{
    public Task PrepareAsync(CancellationToken ct) => topics.EnsureAsync(topic, ct);

    private readonly ReduceWriter _reduce = new(definition, limits, status, documents);

    public int MapAhead => 4;

    public bool FedByAllPartitions => true;

    public async Task LoadAsync(IIndexPersistence index, CancellationToken ct)
    {
        foreach (var entry in index.ScanState()) _reduce.State.Load(entry);
        _reduce.State.Loaded();
    }

    public MappedBatch Map(ChangeBatch batch)
    {
        var watermarks = new Dictionary<string, long>();
        var changes = new List<MappedChange>(batch.Changes.Count);
        foreach (var e in batch.Changes)
            if (MappedTopics.Parse(e, watermarks) is { } change) changes.Add(change);
        return new MappedBatch(batch, [], [], 0) { Changes = changes, Watermarks = watermarks };
    }

    public Task<MappedBatch> ApplyAsync(MappedBatch batch, CancellationToken ct) => _reduce.ApplyAsync(batch, ct);
}
