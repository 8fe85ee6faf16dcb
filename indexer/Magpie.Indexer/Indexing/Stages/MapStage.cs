using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

namespace Magpie.Indexer.Indexing.Stages;

/// <summary>
/// A map index: each changed document's entries replace its old ones, a deleted document's go. A document whose map
/// throws, or whose entries the engine would refuse, is recorded and loses its entries, so the index never shows a
/// version the map can't produce.
/// </summary>
/// <param name="storeSource">Keep each document (with its metadata) in its entries as <see cref="EntryFields.Source"/>:
/// Kafka-mode indexers have no document store beside them, so query results come from the index.</param>
/// <param name="lookup">Where <c>load(id)</c> reads documents (the store); a map that loads keeps what each document loaded
/// (<see cref="DocumentReferences"/>) and maps the documents that loaded one again when it changes, in the batch that changes it.</param>
public sealed class MapStage(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, bool storeSource,
    Contracts.Documents.IDocumentLookup? lookup = null) : IIndexStage
{
    private readonly MapScript _maps = MapScript.Compile(definition.Maps, limits);
    private DocumentLoads? _loads;

    private DocumentLoads? Loads => _maps.Loads ? _loads ??= new DocumentLoads(_maps, lookup) : null;

    /// <summary>
    /// Commits may run beside a batch's writes, what each document loaded included: a replay from the commit's position maps the
    /// same documents again and writes their entries and what they loaded anew, and the changes of loaded documents in it map their
    /// referrers again, so nothing a commit caught half of stays half done. (Whole-batch commits held the writes behind every
    /// commit: 0.33 of the map without loads at 1M posts.)
    /// </summary>
    public bool WholeBatchCommits => false;

    public Task LoadAsync(IIndexPersistence index, CancellationToken ct)
    {
        if (Loads?.References is not { } references) return Task.CompletedTask;
        foreach (var entry in index.ScanState()) references.Load(entry);
        foreach (var (id, loaded) in index.ScanStored(EntryFields.Loads)) references.Load(id, loaded);
        return Task.CompletedTask;
    }

    public MappedBatch Map(ChangeBatch batch)
    {
        var deletes = new List<string>();
        var documents = new List<IndexedDocument>();
        var entries = 0;
        var loads = Loads;
        var references = loads?.References;
        foreach (var change in loads?.Changes(batch) ?? _maps.LatestOf(batch))
        {
            if (change.Op == ChangeOp.Delete)
            {
                deletes.Add(change.Id);
                status.Cleared(change.Id);
                references?.Deleted(change.Id, deletes);
                continue;
            }
            status.Attempted(1);
            List<IndexEntry> mapped;
            try
            {
                mapped = _maps.Run(change).Select(e => EntryMapping.From(e, definition)).ToList();
                if (storeSource) mapped = WithSource(mapped, change);
                entries += mapped.Count;
                status.Cleared(change.Id);
            }
            catch (Exception e) when (e is ScriptRunException or EntryRefusedException)
            {
                status.Error(change.Id, e.Message);
                mapped = [];
            }
            // What it loaded is kept whether its map passed or not: a document it needed appearing later maps it again.
            references?.Keep(change.Id, _maps.Loaded, mapped, documents, deletes);
            documents.Add(new IndexedDocument(change.Id, mapped));
        }
        if (documents.Any(d => d.Entries.Any(e => e.Fields.Any(f => f is EmbeddingField)))) Embed(documents);
        return new MappedBatch(FeedRead.Of(batch), deletes, documents, entries);
    }

    /// <summary>
    /// The batch's <c>embedding.text</c> fields made vectors, all texts of the batch in the model's batches (each distinct text once).
    /// When the model fails, the documents that asked for one are recorded as failed and lose their entries, as a map error does.
    /// </summary>
    private void Embed(List<IndexedDocument> documents)
    {
        var model = Embeddings.BuiltInModel.Shared;
        var texts = documents.SelectMany(d => d.Entries).SelectMany(e => e.Fields).OfType<EmbeddingField>().Select(f => f.Text).Distinct(StringComparer.Ordinal).ToList();
        Dictionary<string, float[]> vectors;
        string? failure = null;
        try
        {
            var made = model.EmbedAsync(texts, CancellationToken.None).GetAwaiter().GetResult();
            vectors = new Dictionary<string, float[]>(StringComparer.Ordinal);
            for (var i = 0; i < texts.Count; i++) vectors[texts[i]] = made[i];
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            vectors = [];
            failure = $"the embedding model {model.Model} failed: {e.Message}";
        }
        for (var i = 0; i < documents.Count; i++)
        {
            var document = documents[i];
            if (!document.Entries.Any(e => e.Fields.Any(f => f is EmbeddingField))) continue;
            if (failure is not null)
            {
                status.Error(document.Id, failure);
                documents[i] = document with { Entries = [] };
                continue;
            }
            documents[i] = document with
            {
                Entries = [.. document.Entries.Select(e => new IndexEntry([.. e.Fields.Select(f => f is EmbeddingField m ? new VectorField(m.Name, vectors[m.Text]) : f)]))],
            };
        }
    }

    private static List<IndexEntry> WithSource(List<IndexEntry> entries, ChangeEvent change)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
            Contracts.Documents.DocumentMetadata.WriteWithMetadata(w, change.Document!.Value, change.Id, change.Collection, change.Etag, change.LastModified);
        var source = new StoredJsonField(EntryFields.Source, buffer.WrittenMemory);
        return entries.Select(e => new IndexEntry([.. e.Fields, source])).ToList();
    }
}
