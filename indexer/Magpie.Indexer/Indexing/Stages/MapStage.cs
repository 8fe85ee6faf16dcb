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
public sealed class MapStage(IndexDefinition definition, ScriptLimits limits, IIndexErrors status, bool storeSource) : IIndexStage
{
    private readonly MapScript _maps = MapScript.Compile(definition.Maps, limits);

    public bool WholeBatchCommits => false;

    public MappedBatch Map(ChangeBatch batch)
    {
        var deletes = new List<string>();
        var documents = new List<IndexedDocument>();
        var entries = 0;
        foreach (var change in LatestOf(batch, _maps))
        {
            if (change.Op == ChangeOp.Delete) { deletes.Add(change.Id); status.Deleted(change.Id); continue; }
            status.Attempted(1);
            try
            {
                var mapped = _maps.Run(change).Select(e => EntryMapping.From(e, definition)).ToList();
                if (storeSource) mapped = WithSource(mapped, change);
                entries += mapped.Count;
                documents.Add(new IndexedDocument(change.Id, mapped));
            }
            catch (Exception e) when (e is ScriptRunException or EntryRefusedException)
            {
                status.Error(change.Id, e.Message);
                documents.Add(new IndexedDocument(change.Id, []));
            }
        }
        return new MappedBatch(FeedRead.Of(batch), deletes, documents, entries);
    }

    /// <summary>The last change of each document of the maps' collections in the batch: earlier ones are superseded.</summary>
    public static IEnumerable<ChangeEvent> LatestOf(ChangeBatch batch, MapScript maps)
    {
        var latest = new Dictionary<string, ChangeEvent>(StringComparer.Ordinal);
        foreach (var change in batch.Changes)
            if (maps.Covers(change.Collection)) latest[change.Id] = change;
        return latest.Values;
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
