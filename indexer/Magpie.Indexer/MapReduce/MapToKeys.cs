using Magpie.Contracts.Changes;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Indexing.Stages;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// The map half of a map/reduce index: runs the maps over a batch's latest change per document and says what each
/// document now contributes to each reduce key, leaving keys included (<see cref="DocumentKeys"/>). A document whose
/// map or key throws is recorded and contributes nothing. Owns its own reduce script (for the keys): the reduce half
/// runs on another thread.
/// </summary>
/// <remarks>Maps that <c>load()</c> (<paramref name="lookup"/>: the store, or an ingest process in Kafka mode) keep what each document
/// loaded as state entries, added to the batch's writes.</remarks>
public sealed class MapToKeys(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, IDocumentLookup? lookup = null)
{
    private readonly MapScript _maps = MapScript.Compile(definition.Maps, limits);
    private readonly ReduceScript _keys = ReduceScript.Compile(definition.Reduce!, limits);
    private DocumentKeys? _documents;
    private DocumentLoads? _loads;

    private DocumentKeys Documents => _documents ??= new DocumentKeys(_keys);

    private DocumentLoads? Loading => _maps.Loads ? _loads ??= new DocumentLoads(_maps, lookup) : null;

    /// <summary>Whether the maps call <c>load()</c>.</summary>
    public bool Loads => _maps.Loads;

    /// <summary>A committed state entry: what a document loaded, or which reduce key it feeds. False: not the map side's (the reduce's).</summary>
    public bool Load(StateEntry entry)
    {
        if (entry.Key == DocumentReferences.Key)
        {
            Loading?.References.Load(entry);
            return false;
        }
        Documents.Load(entry);
        return true;
    }

    /// <param name="state">What documents loaded, to write beside the results (and <paramref name="stateDeletes"/>: to delete).</param>
    public List<MappedChange> Map(ChangeBatch batch, List<IndexedDocument>? state = null, List<string>? stateDeletes = null)
    {
        var changes = new List<MappedChange>();
        var loads = Loading;
        foreach (var change in loads?.Changes(batch) ?? _maps.LatestOf(batch))
        {
            if (change.Op == ChangeOp.Delete)
            {
                changes.AddRange(Documents.Changes(change.Id, []));
                status.Cleared(change.Id);
                if (loads is not null) loads.References.Deleted(change.Id, stateDeletes!);
                continue;
            }
            status.Attempted(1);
            try
            {
                changes.AddRange(Documents.Changes(change.Id, _maps.RunJson(change)));
                status.Cleared(change.Id);
            }
            catch (ScriptRunException e)
            {
                status.Error(change.Id, e.Message);
                changes.AddRange(Documents.Changes(change.Id, []));
            }
            // No entry of its own to carry them (its results are per key): what it loaded is a state entry.
            loads?.References.Keep(change.Id, _maps.Loaded, [], state!, stateDeletes!);
        }
        return changes;
    }
}

/// <summary>
/// The reduce half: applies mapped changes to the <see cref="ReduceState"/>, re-reduces the touched keys and turns the
/// outcome into Lucene writes — each result under its key's id (kept whole as <see cref="EntryFields.Source"/>, what
/// queries return), gone keys deleted, and the state entries beside them so they commit together. With an output
/// collection, the results are written back as documents first — unless <paramref name="documents"/> is null: a replacement
/// built side by side writes its output only once it serves (<see cref="OutputHandover"/>).
/// </summary>
public sealed class ReduceWriter(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, IDocumentOutput? documents, string? handover = null)
{
    private readonly ReduceOutput? _output = definition.OutputReduceToCollection is { } collection && documents is not null
        ? new ReduceOutput(collection, documents, definition.Fingerprint())
        : null;
    private readonly ReduceScript _reduce = ReduceScript.Compile(definition.Reduce!, limits);
    private ReduceState? _state;

    public ReduceState State => _state ??= new ReduceState(_reduce);

    /// <summary>
    /// After the state is loaded: if this index just took over its output collection from the version it replaced, writes every
    /// result as a document and deletes the documents of keys only the replaced version had, then marks the handover done.
    /// </summary>
    public async Task HandOverAsync(CancellationToken ct)
    {
        if (_output is null || handover is null || OutputHandover.Read(handover) is not { } replaced) return;
        var results = State.Results();
        var keys = results.Select(r => r.Key).ToHashSet(StringComparer.Ordinal);
        var gone = replaced.Where(k => !keys.Contains(k)).ToList();
        var refused = new List<(string Key, string Reason)>();
        foreach (var chunk in results.Chunk(1024)) refused.AddRange(await _output.WriteAsync(new ReduceFlush([.. chunk], [], [], []), ct));
        foreach (var chunk in gone.Chunk(1024)) refused.AddRange(await _output.WriteAsync(new ReduceFlush([], [.. chunk], [], []), ct));
        foreach (var (key, message) in refused) status.Error($"reduce key {key}", message);
        OutputHandover.Done(handover);
    }

    public async Task<MappedBatch> ApplyAsync(MappedBatch batch, CancellationToken ct)
    {
        foreach (var change in batch.Changes) State.Apply(change);
        var flush = State.Flush();
        var refused = _output is null ? [] : await _output.WriteAsync(flush, ct);
        foreach (var (key, message) in flush.Failed.Concat(refused)) status.Error($"reduce key {key}", message);
        status.Attempted(flush.Results.Count + flush.Failed.Count);
        var deletes = flush.Gone;
        var documents = new List<IndexedDocument>(flush.Results.Count);
        foreach (var (key, result) in flush.Results)
        {
            try
            {
                documents.Add(new IndexedDocument(key,
                    [new IndexEntry([.. EntryMapping.From(ReduceState.EntryOf(result), definition).Fields, new StoredField(EntryFields.Source, result)])]));
            }
            catch (EntryRefusedException e)
            {
                // The key's result is not queryable (its old one goes too, as a failed map's entries do); its state stays for the next change.
                status.Error($"reduce key {key}", e.Message);
                deletes.Add(key);
            }
        }
        foreach (var (id, entry) in flush.State)
            if (entry is null) deletes.Add(id);
            else documents.Add(entry.ToDocument());
        // What the map side kept beside the results (what documents loaded) goes in the same writes.
        return batch with { Deletes = [.. batch.Deletes, .. deletes], Documents = [.. batch.Documents, .. documents], Entries = flush.Results.Count };
    }
}

/// <summary>Embedded map/reduce: both halves in one worker, the reduce on the write loop, several mapped batches allowed ahead.</summary>
public sealed class LocalMapReduceStage(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, IDocumentOutput? documents = null,
    string? handover = null, IDocumentLookup? lookup = null) : IIndexStage
{
    private readonly MapToKeys _map = new(definition, limits, status, lookup);
    private readonly ReduceWriter _reduce = new(definition, limits, status, documents, handover);

    public int MapAhead => 4;

    public async Task LoadAsync(IIndexPersistence index, CancellationToken ct)
    {
        foreach (var entry in index.ScanState())
            if (_map.Load(entry)) _reduce.State.Load(entry);
        _reduce.State.Loaded();
        await _reduce.HandOverAsync(ct);
    }

    public MappedBatch Map(ChangeBatch batch)
    {
        List<string> deletes = [];
        List<IndexedDocument> state = [];
        return new(FeedRead.Of(batch), deletes, state, 0) { Changes = _map.Map(batch, state, deletes) };
    }

    public Task<MappedBatch> ApplyAsync(MappedBatch batch, CancellationToken ct) => _reduce.ApplyAsync(batch, ct);
}
