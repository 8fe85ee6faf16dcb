using Magpie.Contracts;
using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Query.Rql;
using Magpie.Scripting;

namespace Magpie.Query.Projections;

/// <summary>
/// What each hit of a query becomes: the document (as GET /docs returns it: from the store beside the index, or the source the
/// index keeps in Kafka mode), the selected fields (stored in the index, or read from the document by path), or the JavaScript
/// projection over the document and its loaded documents; and the ids the result includes. Loads and includes read the
/// document store: where there is none (an indexer process in Kafka mode) such a query is refused.
/// </summary>
public sealed class HitResults : IDisposable
{
    private readonly RqlQuery _query;
    private readonly IDocumentLookup? _documents;
    private readonly HitHighlights? _highlights;
    private readonly bool _highlightsReadDocuments;
    private readonly ScriptProjection? _script;
    private readonly bool _documentIds;
    private long _documentsRead;

    /// <summary>How many results needed their document (none: every result came from what the index holds).</summary>
    public long DocumentsRead => Interlocked.Read(ref _documentsRead);

    /// <summary>Fields the index stores (<c>store: true</c>): a selected one is answered from the index alone, null where an entry lacks it.</summary>
    private readonly IReadOnlySet<string> _indexStores;

    /// <param name="highlights">The page's <c>highlight(…)</c>s; with <paramref name="highlightsReadDocuments"/> some read the document's text.</param>
    /// <param name="documentIds">Whether a hit's id is a document's (not a map/reduce result's): a projection then names it in its <c>@metadata</c>.</param>
    public HitResults(RqlQuery query, IDocumentLookup? documents, ScriptLimits limits, IReadOnlySet<string>? indexStores = null,
        HitHighlights? highlights = null, bool highlightsReadDocuments = false, bool documentIds = true)
    {
        _query = query;
        _documentIds = documentIds && query.GroupBy.Count == 0;
        (_highlights, _highlightsReadDocuments) = (highlights, highlightsReadDocuments);
        _documents = documents;
        _indexStores = indexStores ?? new HashSet<string>();
        if (query.ReadsRelatedDocuments && documents is null)
            throw new QueryProblem(ErrorKind.Invalid, "load and include read related documents from the document store, which this indexer cannot reach "
                + "(Kafka mode: give indexers MAGPIE__INGESTURL, the address of an ingest process)");
        _script = query.Script is null ? null : ScriptProjectionPool.Rent(query, limits);
    }

    /// <summary>Gives the projection back to the pool for the next query with the same script.</summary>
    public void Dispose()
    {
        if (_script is not null) ScriptProjectionPool.Return(_query, _script);
    }

    /// <summary>The result of one hit (null: its document is gone), the ids it includes and its highlighted fragments.</summary>
    public async Task<(JsonElement? Result, IReadOnlyList<string> Includes, Dictionary<string, IReadOnlyList<string>>? Highlights)> ResultOfAsync(SearchHit hit, CancellationToken ct)
    {
        JsonElement? document = null;
        var read = false;
        async Task<JsonElement?> Document()
        {
            if (read) return document;
            read = true;
            Interlocked.Increment(ref _documentsRead);
            if (hit.Stored.TryGetValue(EntryFields.Source, out var source) && source.Count > 0) return document = StoredJson(source[0]);
            return document = _documents is null ? null : await _documents.GetAsync(hit.Id, ct);
        }
        // Only a query that includes needs the document for that: a projection the index stores reads none.
        IReadOnlyList<string> includes = _query.Includes.Count > 0 && await Document() is { } d ? IncludesOf(d) : [];
        var result = await ResultOf(hit.Id, Document, hit.Stored, ct);
        if (result is { ValueKind: JsonValueKind.Object } r && _query.OrderBy.Any(o => o.IsScore)) result = DocumentMetadata.WithIndexScore(r, hit.Score);
        var highlights = _highlights?.Of(hit, _highlightsReadDocuments ? await Document() : null);
        return (result, includes, highlights);
    }

    /// <summary>The result of a document (with its metadata) that no index holds (a subscription's change).</summary>
    public Task<JsonElement?> ResultOfAsync(string id, JsonElement document, CancellationToken ct) =>
        ResultOf(id, () => Task.FromResult<JsonElement?>(document), null, ct);

    /// <summary>The ids of the documents a document includes (<c>include</c> paths), each once.</summary>
    public IReadOnlyList<string> IncludesOf(JsonElement document) =>
        _query.Includes.Count == 0 ? [] : _query.Includes.SelectMany(p => DocumentPaths.Ids(document, p)).Distinct().ToList();

    /// <param name="stored">Values the index stores for the hit (selected fields read there first), or null.</param>
    private async Task<JsonElement?> ResultOf(string id, Func<Task<JsonElement?>> document, IReadOnlyDictionary<string, IReadOnlyList<object>>? stored, CancellationToken ct)
    {
        var result = await ProjectedAsync(id, document, stored, ct);
        // A projection names its document in @metadata, as RavenDB's do (@id, @projection); distinct results are compared whole, so stay bare.
        return result is { ValueKind: JsonValueKind.Object } r && _documentIds && !_query.Distinct && (_script is not null || _query.Select.Count > 0)
            ? DocumentMetadata.With(r, ("@id", JsonSerializer.SerializeToElement(id)), ("@projection", JsonSerializer.SerializeToElement(true)))
            : result;
    }

    private async Task<JsonElement?> ProjectedAsync(string id, Func<Task<JsonElement?>> document, IReadOnlyDictionary<string, IReadOnlyList<object>>? stored, CancellationToken ct)
    {
        if (_script is not null)
        {
            if (await document() is not { } d) return null;
            var loaded = new List<JsonElement?>();
            var count = 0;
            foreach (var load in _query.Loads)
            {
                var values = DocumentPaths.Values(d, load.Path).Where(v => v.ValueKind != JsonValueKind.Undefined).ToList();
                // An array of ids (or a path through arrays, Lines[].Product) loads an array, even of one.
                var many = load.Path.Contains("[]", StringComparison.Ordinal) || values.Count > 1 || values.Any(v => v.ValueKind == JsonValueKind.Array);
                var docs = new List<JsonElement?>();
                foreach (var related in DocumentPaths.Ids(d, load.Path))
                {
                    if (++count > QueryLimits.MaxLoadedPerResult)
                        throw new QueryProblem(ErrorKind.Invalid, $"a result loads more than {QueryLimits.MaxLoadedPerResult} documents (the limit)");
                    docs.Add(await _documents!.GetAsync(related, ct));
                }
                loaded.Add(many ? JsonSerializer.SerializeToElement(docs) : docs.FirstOrDefault());
            }
            return _script.Project(d, loaded, related => _documents is null
                ? throw new QueryProblem(ErrorKind.Invalid, "load() in a projection reads the document store, which this indexer cannot reach (Kafka mode: give indexers MAGPIE__INGESTURL)")
                : _documents.GetAsync(related, ct).AsTask().GetAwaiter().GetResult());
        }
        if (_query.Select.Count == 0) return await document();
        var projection = new Dictionary<string, JsonElement?>();
        foreach (var p in _query.Select)
        {
            if (p.Field == RqlFields.Id) projection[p.Alias] = JsonSerializer.SerializeToElement(id);
            else if (stored is not null && stored.TryGetValue(p.Field + EntryFields.Stored, out var value) && value.Count > 0) projection[p.Alias] = StoredJson(value[0]);
            else if (stored is not null && _indexStores.Contains(p.Field)) projection[p.Alias] = null;
            else projection[p.Alias] = await document() is { } d ? DocumentPaths.Projected(d, p.Field) : null;
        }
        return JsonSerializer.SerializeToElement(projection);
    }

    /// <summary>The included documents of a page: each id once (missing ones left out), at most <see cref="QueryLimits.MaxIncludedPerPage"/>.</summary>
    public async Task<Dictionary<string, JsonElement>?> IncludedAsync(IEnumerable<string> ids, CancellationToken ct)
    {
        if (_query.Includes.Count == 0) return null;
        // Ids compare case-insensitively: a document referenced in two spellings is included once, under the first.
        var distinct = ids.Distinct(StringComparer.OrdinalIgnoreCase).ToList();
        if (distinct.Count > QueryLimits.MaxIncludedPerPage)
            throw new QueryProblem(ErrorKind.Invalid, $"the page includes {distinct.Count:N0} documents; the limit is {QueryLimits.MaxIncludedPerPage:N0} (ask for smaller pages)");
        var included = new Dictionary<string, JsonElement>(StringComparer.OrdinalIgnoreCase);
        foreach (var id in distinct)
            if (await _documents!.GetAsync(id, ct) is { } doc) included[id] = doc;
        return included;
    }

    /// <summary>A stored JSON value: UTF-8 bytes (documents a Kafka-mode map index keeps) or a string (projections, reduce results).</summary>
    private static JsonElement StoredJson(object value) => value switch
    {
        byte[] utf8 => JsonDocument.Parse(utf8).RootElement,
        string text => JsonDocument.Parse(text).RootElement,
        _ => throw new InvalidOperationException($"a stored JSON value of type {value.GetType().Name}"),
    };
}
