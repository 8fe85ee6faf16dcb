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
/// <param name="embedders">Who makes <c>embedding.text</c>'s vectors: the built-in model, or a connection by name (null: the built-in model only).</param>
public sealed class MapStage(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, bool storeSource,
    Contracts.Documents.IDocumentLookup? lookup = null, Embeddings.Connections.EmbeddingConnections? embedders = null) : IIndexStage
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
    /// The batch's <c>embedding.text</c> fields made vectors: per embedder (the built-in model or a connection), every distinct text of
    /// the batch in one call, which batches them as the embedder does best. A provider that cannot answer now fails the batch: the
    /// worker tries it again after its back-off, with the reason in its status, and no document is counted as failed, so an outage
    /// neither errors the index nor loses a vector. A refusal (or a model failure) fails the documents that asked, with the reason;
    /// a refused request of several texts is asked again text by text, so only the texts refused fail their documents.
    /// </summary>
    private void Embed(List<IndexedDocument> documents)
    {
        var vectors = new Dictionary<(string?, string), float[]>();
        var failures = new Dictionary<(string?, string), string>();
        var asked = documents.SelectMany(d => d.Entries).SelectMany(e => e.Fields).OfType<EmbeddingField>()
            .GroupBy(f => f.Connection).Select(g => (Connection: g.Key, Texts: g.Select(f => f.Text).Distinct(StringComparer.Ordinal).ToList()));
        foreach (var (connection, texts) in asked)
        {
            var name = connection is null ? $"the embedding model {Embeddings.BuiltInModel.Name}" : $"embedding connection '{connection}'";
            try
            {
                var embedder = (embedders ?? BuiltInOnly).For(connection);
                float[][] made;
                try { made = Wait(embedder.EmbedAsync(texts, CancellationToken.None)); }
                catch (Embeddings.Connections.EmbeddingRefusedException) when (texts.Count > 1)
                {
                    made = new float[texts.Count][];
                    for (var i = 0; i < texts.Count; i++)
                        try { made[i] = Wait(embedder.EmbedAsync([texts[i]], CancellationToken.None))[0]; }
                        catch (Embeddings.Connections.EmbeddingRefusedException e) { failures[(connection, texts[i])] = e.Message; }
                }
                for (var i = 0; i < texts.Count; i++) if (made[i] is { } vector) vectors[(connection, texts[i])] = vector;
            }
            catch (Exception e) when (e is not (OperationCanceledException or Embeddings.Connections.EmbeddingUnavailableException))
            {
                var reason = e is Embeddings.Connections.EmbeddingRefusedException ? e.Message : $"{name} failed: {e.Message}";
                foreach (var text in texts) failures[(connection, text)] = reason;
            }
        }
        for (var i = 0; i < documents.Count; i++)
        {
            var document = documents[i];
            if (!document.Entries.Any(e => e.Fields.Any(f => f is EmbeddingField))) continue;
            var failure = document.Entries.SelectMany(e => e.Fields).OfType<EmbeddingField>()
                .Select(f => failures.GetValueOrDefault((f.Connection, f.Text)) ?? DimensionsProblem(f, vectors[(f.Connection, f.Text)])).FirstOrDefault(p => p is not null);
            if (failure is not null)
            {
                status.Error(document.Id, failure);
                documents[i] = document with { Entries = [] };
                continue;
            }
            documents[i] = document with
            {
                Entries = [.. document.Entries.Select(e => new IndexEntry([.. e.Fields.Select(f => f is EmbeddingField m
                    ? new VectorField(m.Name, vectors[(m.Connection, m.Text)]) { Embedder = Embeddings.Embedders.Of(m.Connection), ScanOnly = m.ScanOnly }
                    : f)]))],
            };
        }
    }

    private static readonly Embeddings.Connections.EmbeddingConnections BuiltInOnly = new();

    /// <summary>The map stage runs on a worker thread of its own: it waits for the embedder there.</summary>
    private static float[][] Wait(Task<float[][]> embedding) => embedding.GetAwaiter().GetResult();

    /// <summary>A vector whose length is not the one the field declares (a connection's model changed, or its <c>dimensions</c>).</summary>
    private string? DimensionsProblem(EmbeddingField field, float[] vector) =>
        definition.FieldOptions(field.Name).Vector?.Dimensions is { } dimensions && dimensions != vector.Length
            ? $"the field '{field.Name}' is declared with {dimensions} dimensions; the embedding made of its text has {vector.Length}"
            : null;

    private static List<IndexEntry> WithSource(List<IndexEntry> entries, ChangeEvent change)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
            Contracts.Documents.DocumentMetadata.WriteWithMetadata(w, change.Document!.Value, change.Id, change.Collection, change.Etag, change.LastModified);
        var source = new StoredJsonField(EntryFields.Source, buffer.WrittenMemory);
        return entries.Select(e => new IndexEntry([.. e.Fields, source])).ToList();
    }
}
