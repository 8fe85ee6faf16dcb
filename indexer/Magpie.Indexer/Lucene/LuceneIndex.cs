
namespace Magpie.Indexer.Lucene;

/// <summary>
/// What a query asks of one index. <see cref="After"/> (a cursor from a previous page) replaces <see cref="Skip"/>; <see cref="StoredFields"/>
/// null = all stored fields; <see cref="Snapshot"/> (from <see cref="LuceneIndex.AcquireSnapshotAsync"/>) searches that point in time, 0 = now.
/// </summary>
public sealed record SearchRequest(LuceneQuery Query, IReadOnlyList<SortField> Sort, int PageSize, int Skip = 0, SearchCursor? After = null,
    IReadOnlyList<string>? StoredFields = null, long Snapshot = 0);

public sealed record SearchHit(string Id, float Score, IReadOnlyDictionary<string, IReadOnlyList<object>> Stored, SearchCursor Cursor);

public sealed record SearchPage(long TotalHits, IReadOnlyList<SearchHit> Hits);

/// <summary>Commit user data (how far the index consumed its source), the live entry count, the facet cache's figures.</summary>
public sealed record LuceneIndexState(IReadOnlyDictionary<string, string> CommitData, long Entries, FacetCacheStats FacetCache);

/// <summary>
/// One Lucene index in the host: an IndexWriter on an NIOFSDirectory and a near-real-time searcher.
/// Writes are visible to searches after <see cref="RefreshAsync"/>, durable after <see cref="CommitAsync"/>,
/// whose user data records the position the index has consumed.
/// </summary>
public sealed class LuceneIndex
{
    private readonly LuceneHostProcess _host;
    private readonly int _handle;

    private LuceneIndex(LuceneHostProcess host, int handle, LuceneIndexState opened)
    {
        _host = host;
        _handle = handle;
        Opened = opened;
    }

    /// <summary>The state of the last commit when the index was opened.</summary>
    public LuceneIndexState Opened { get; }

    public static async Task<LuceneIndex> OpenAsync(LuceneHostProcess host, string directory, CancellationToken ct = default)
    {
        Directory.CreateDirectory(directory);
        var r = await host.CallAsync(LuceneProtocol.Open, w => w.String(Path.GetFullPath(directory)), ct);
        var handle = r.Int();
        return new LuceneIndex(host, handle, ReadState(r));
    }

    /// <summary>Deletes every entry of <paramref name="deletes"/>, then replaces each document's entries (not visible before a refresh).</summary>
    public async Task WriteAsync(IReadOnlyCollection<string> deletes, IReadOnlyList<IndexedDocument> documents, CancellationToken ct = default) =>
        await _host.CallAsync(LuceneProtocol.Write, w =>
        {
            w.Int(_handle).Int(deletes.Count);
            foreach (var id in deletes) w.String(id);
            w.Int(documents.Count);
            foreach (var d in documents)
            {
                w.String(d.Id).Int(d.Entries.Count);
                foreach (var e in d.Entries)
                {
                    w.Int(e.Fields.Count);
                    foreach (var f in e.Fields) f.Write(w);
                }
            }
        }, ct);

    /// <summary>Makes everything written so far durable, with <paramref name="commitData"/> as the commit's user data.</summary>
    public async Task CommitAsync(IReadOnlyDictionary<string, string> commitData, CancellationToken ct = default) =>
        await _host.CallAsync(LuceneProtocol.Commit, w =>
        {
            w.Int(_handle).Int(commitData.Count);
            foreach (var (k, v) in commitData) w.String(k).String(v);
        }, ct);

    /// <summary>Opens a new near-real-time searcher if anything changed.</summary>
    public async Task RefreshAsync(CancellationToken ct = default) => await _host.CallAsync(LuceneProtocol.Refresh, w => w.Int(_handle), ct);

    public async Task DeleteAllAsync(CancellationToken ct = default) => await _host.CallAsync(LuceneProtocol.DeleteAll, w => w.Int(_handle), ct);

    public async Task<LuceneIndexState> StateAsync(CancellationToken ct = default) =>
        ReadState(await _host.CallAsync(LuceneProtocol.Stats, w => w.Int(_handle), ct));

    /// <summary>
    /// Holds the current searcher (a point in time) until <see cref="ReleaseSnapshotAsync"/>: searches with its id see
    /// exactly what it saw, while writes, refreshes and merges go on. Each held snapshot keeps its segment files open.
    /// </summary>
    public async Task<long> AcquireSnapshotAsync(CancellationToken ct = default) =>
        (await _host.CallAsync(LuceneProtocol.Snapshot, w => w.Int(_handle), ct)).Long();

    public async Task ReleaseSnapshotAsync(long snapshot) => await _host.CallAsync(LuceneProtocol.Release, w => w.Long(snapshot));

    /// <summary>
    /// Every state entry (<see cref="StateEntry"/>) as of now, a page at a time from one snapshot: what a map/reduce
    /// index reloads when it starts, instead of replaying its feed.
    /// </summary>
    public async IAsyncEnumerable<StateEntry> ScanStateAsync([System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken ct = default)
    {
        var snapshot = await AcquireSnapshotAsync(ct);
        try
        {
            for (var from = 0; from >= 0;)
            {
                var r = await _host.CallAsync(LuceneProtocol.ScanState, w => w.Long(snapshot).Int(from).Int(8192), ct);
                from = r.Int();
                var page = new StateEntry[r.Int()];
                for (var i = 0; i < page.Length; i++) page[i] = new StateEntry(r.String()!, r.String()!, r.String());
                foreach (var e in page) yield return e;
            }
        }
        finally { await ReleaseSnapshotAsync(snapshot); }
    }

    public async Task CloseAsync() => await _host.CallAsync(LuceneProtocol.Close, w => w.Int(_handle));

    public async Task<SearchPage> SearchAsync(SearchRequest request, CancellationToken ct = default)
    {
        var r = await _host.CallAsync(LuceneProtocol.Search, w =>
        {
            w.Int(_handle).Long(request.Snapshot);
            request.Query.Write(w);
            w.Int(request.Sort.Count);
            foreach (var s in request.Sort) w.Byte((byte)s.Kind).String(s.Field).Bool(s.Descending);
            w.Int(request.Skip).Int(request.PageSize).Bool(request.After is not null);
            if (request.After is not null) w.Bytes(request.After.Values);
            // null: every stored field; a list: just those.
            w.Int(request.StoredFields?.Count ?? -1);
            foreach (var f in request.StoredFields ?? []) w.String(f);
        }, ct);
        var total = r.Long();
        var hits = new SearchHit[r.Int()];
        for (var i = 0; i < hits.Length; i++)
        {
            var id = r.String()!;
            var score = r.Float();
            var stored = new Dictionary<string, IReadOnlyList<object>>();
            for (var n = r.Int(); n > 0; n--)
            {
                var name = r.String()!;
                object value = r.Byte() switch
                {
                    LuceneProtocol.FieldLong => r.Long(),
                    LuceneProtocol.FieldDouble => r.Double(),
                    _ => r.String()!,
                };
                stored[name] = stored.TryGetValue(name, out var list) ? [.. list, value] : [value];
            }
            hits[i] = new SearchHit(id, score, stored, new SearchCursor(ReadCursor(r)));
        }
        return new SearchPage(total, hits);
    }

    /// <summary>
    /// Counts <paramref name="facets"/> over the entries <paramref name="query"/> matches, in one pass in the host (at
    /// <paramref name="snapshot"/>, or now when 0). Every value comes back; the caller orders, cuts and merges shards.
    /// </summary>
    public async Task<FacetCounts> FacetsAsync(LuceneQuery query, IReadOnlyList<FacetSpec> facets, long snapshot = 0, CancellationToken ct = default)
    {
        var r = await _host.CallAsync(LuceneProtocol.Facets, w =>
        {
            w.Int(_handle).Long(snapshot);
            query.Write(w);
            w.Int(facets.Count);
            foreach (var f in facets) f.Write(w);
        }, ct);
        var total = r.Long();
        var result = new IReadOnlyList<FacetBucket>[r.Int()];
        for (var i = 0; i < result.Length; i++)
        {
            var ranges = facets[i] is RangeFacetSpec;
            var buckets = new FacetBucket[r.Int()];
            for (var b = 0; b < buckets.Length; b++)
            {
                string? text = null;
                double? number = null;
                if (!ranges && r.Byte() == LuceneProtocol.FieldDouble) number = r.Double();
                else if (!ranges) text = r.String();
                var count = r.Long();
                var fields = new FieldTotals[r.Int()];
                for (var a = 0; a < fields.Length; a++) fields[a] = new FieldTotals(r.Long(), r.Double(), r.Double(), r.Double());
                buckets[b] = new FacetBucket(text, number, ranges ? b : -1, count, fields);
            }
            result[i] = buckets;
        }
        return new FacetCounts(total, result);
    }

    /// <summary>Every field name in the index as searched now (with Magpie's suffixes: <c>@num</c>, <c>@ticks</c>, <c>@cs</c>, …).</summary>
    public async Task<IReadOnlyList<string>> FieldNamesAsync(CancellationToken ct = default)
    {
        var r = await _host.CallAsync(LuceneProtocol.Fields, w => w.Int(_handle), ct);
        var names = new string[r.Int()];
        for (var i = 0; i < names.Length; i++) names[i] = r.String()!;
        return names;
    }

    /// <summary>The cursor is the sort values exactly as the host wrote them; it sends them back verbatim.</summary>
    private static byte[] ReadCursor(FrameReader r)
    {
        var start = r.Position;
        for (var n = r.Int(); n > 0; n--)
        {
            switch (r.Byte())
            {
                case 1: r.Bytes(r.Int()); break;
                case 2: r.Long(); break;
                case 3: r.Double(); break;
                case 4: r.Float(); break;
            }
        }
        return r.Slice(start, r.Position).ToArray();
    }

    private static LuceneIndexState ReadState(FrameReader r)
    {
        var data = new Dictionary<string, string>();
        for (var n = r.Int(); n > 0; n--) data[r.String()!] = r.String()!;
        var entries = r.Long();
        return new LuceneIndexState(data, entries, new FacetCacheStats(r.Long(), r.Long(), r.Long(), r.Long(), r.Long(), r.Long(), r.Long(), r.Long()));
    }
}
