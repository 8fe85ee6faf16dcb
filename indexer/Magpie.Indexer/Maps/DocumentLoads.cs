using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Documents;

namespace Magpie.Indexer.Maps;

/// <summary>
/// What a stage whose maps call <c>load(id)</c> needs around them: the reads (from the store, cached until the feed brings a change of
/// the document), what each document loaded (<see cref="DocumentReferences"/>), and for each batch the documents to map again
/// because a document they loaded changed in it. Map indexes and map/reduce indexes share it.
/// </summary>
public sealed class DocumentLoads
{
    /// <summary>
    /// Loaded documents kept for later maps (a user loaded by each of their posts is read once): a document leaves it when the feed
    /// brings a change of it, before that batch is mapped — the same change maps its referrers again — so a map never reads a
    /// version older than the feed has delivered. When full it starts over (the limit of what loads keep in memory).
    /// </summary>
    public const int CacheSize = 100_000;

    private readonly MapScript _maps;
    private readonly IDocumentLookup? _lookup;
    private readonly Dictionary<string, JsonElement?> _cache = new(StringComparer.OrdinalIgnoreCase);   // ids compare case-insensitively

    public DocumentLoads(MapScript maps, IDocumentLookup? lookup)
    {
        (_maps, _lookup) = (maps, lookup);
        maps.Loader = Load;
    }

    public DocumentReferences References { get; } = new();

    /// <summary>
    /// The batch's changes to map: the latest change of each document of the maps' collections, then a change for each document
    /// that loaded one the batch changed (any collection; in Kafka mode on any partition, <see cref="ChangeBatch.ChangedElsewhere"/>),
    /// at its current version read from the store (gone: its own delete is on its way). Cached versions of what the batch changed
    /// are forgotten first.
    /// </summary>
    public IEnumerable<ChangeEvent> Changes(ChangeBatch batch)
    {
        foreach (var change in batch.Changes) _cache.Remove(change.Id);
        foreach (var id in batch.ChangedElsewhere) _cache.Remove(id);
        var latest = _maps.LatestOf(batch).ToDictionary(c => c.Id, StringComparer.Ordinal);
        foreach (var change in latest.Values) yield return change;
        var again = new HashSet<string>(StringComparer.Ordinal);
        foreach (var changed in batch.Changes.Select(c => c.Id).Concat(batch.ChangedElsewhere))
            foreach (var referrer in References.ReferrersOf(changed))
                if (!latest.ContainsKey(referrer)) again.Add(referrer);
        foreach (var referrer in again)
            if (Read(referrer) is { } current && current.TryGetProperty("@metadata", out var m))
                yield return new ChangeEvent(referrer, m.GetProperty("@collection").GetString()!, m.GetProperty("@etag").GetInt64(), ChangeOp.Put,
                    m.TryGetProperty("@last-modified", out var at) ? at.GetDateTimeOffset() : DateTimeOffset.UtcNow, current);
    }

    private JsonElement? Load(string id)
    {
        if (_cache.TryGetValue(id, out var cached)) return cached;
        var document = Read(id);
        if (_cache.Count >= CacheSize) _cache.Clear();
        _cache[id] = document;
        return document;
    }

    /// <summary>
    /// A document as the store has it now. The store unreachable (Kafka mode reads through the ingest) fails the batch, not the
    /// document: the worker retries from its last commit, and no map records an error that was not the document's.
    /// </summary>
    private JsonElement? Read(string id)
    {
        if (_lookup is null) throw new Scripting.ScriptHostException("load() reads documents through an ingest process in Kafka mode: give indexers MAGPIE__INGESTURL");
        try { return _lookup.GetAsync(id).AsTask().GetAwaiter().GetResult(); }
        catch (global::Magpie.Http.IngestUnavailableException e) { throw new Scripting.ScriptHostException(e.Message, e); }
    }
}
