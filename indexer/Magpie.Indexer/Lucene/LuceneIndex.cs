using System.Collections.Concurrent;
using Lucene.Net.Documents;
using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Indexer.Engine;
using Microsoft.Extensions.Logging;
using Query = Lucene.Net.Search.Query;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// One Lucene.Net index: its <see cref="IndexWriter"/> and near-real-time <see cref="SearcherManager"/>. Searches acquire the
/// current searcher (or a held snapshot) for their duration; writes go on meanwhile.
/// </summary>
internal sealed class LuceneIndex : IIndexPersistence
{
    private readonly LuceneEngine _engine;
    private readonly IndexWriter _writer;
    private readonly global::Lucene.Net.Store.Directory _files;
    private readonly SearcherManager _searchers;
    private readonly ConcurrentDictionary<long, IndexSearcher> _snapshots = new();
    private KnownIdFilter _known;
    private readonly Vectors.VectorColumns _vectors;
    private long _nextSnapshot;
    private volatile bool _closed;

    /// <param name="graphs">The folder the index's nearest-neighbour graphs are saved in (null: in memory only).</param>
    public LuceneIndex(LuceneEngine engine, IndexWriter writer, string? graphs = null)
    {
        _engine = engine;
        _writer = writer;
        _files = writer.Directory;
        _searchers = new SearcherManager(writer, applyAllDeletes: true, new SimilarSearchers(engine.Similarity));
        _known = KnownIdsFilledInBackground();
        _vectors = new Vectors.VectorColumns((leaf, what, read) => engine.Columns.Other(this, leaf, what, read, c => c.Size),
            new Vectors.VectorGraphs(graphs, engine.VectorGraphMinimum, engine.Log));
        Opened = State();
        PrepareGraphs();
    }

    /// <summary>Queues the graphs of the segments the index holds now (on opening and after each commit): built before a search asks.</summary>
    private void PrepareGraphs()
    {
        if (_vectors.Graphs is not { } graphs) return;
        var searcher = Guard(_searchers.Acquire);
        try { graphs.Prepare(searcher.IndexReader); }
        finally { _searchers.Release(searcher); }
    }

    /// <summary>
    /// A filter of the ids the index holds, filled from a searcher on a pool thread: opening an index of millions of ids does not
    /// wait for it. Until it is filled every write is an update; a failure (the index closed meanwhile) leaves it that way.
    /// </summary>
    private KnownIdFilter KnownIdsFilledInBackground()
    {
        var searcher = _searchers.Acquire();
        var leaves = searcher.IndexReader.Leaves.Select(l => l.AtomicReader.GetTerms(LuceneDocuments.Id)).OfType<Terms>().ToList();
        var known = new KnownIdFilter(leaves.Sum(t => Math.Max(0, t.Count)), filling: leaves.Count > 0, budget: _engine.KnownIdsBudget);
        if (leaves.Count == 0)
        {
            _searchers.Release(searcher);
            return known;
        }
        KnownIdsFill = Task.Run(() =>
        {
            try
            {
                foreach (var terms in leaves)
                {
                    var e = terms.GetEnumerator();
                    while (!_closed && e.MoveNext()) known.Add(e.Term.Utf8ToString());
                }
                if (!_closed) known.Filled();
            }
            catch (Exception ex)   // the fill only saves work: whatever stops it leaves every id "maybe held", which is always right
            {
                if (!_closed) _engine.Log.LogWarning(ex, "the filter of known ids could not be filled; every write stays an update");
            }
            finally
            {
                try { _searchers.Release(searcher); } catch (ObjectDisposedException) { }
            }
        });
        return known;
    }

    /// <summary>Searchers that score as the writer indexed (BM25).</summary>
    private sealed class SimilarSearchers(global::Lucene.Net.Search.Similarities.Similarity similarity) : SearcherFactory
    {
        public override IndexSearcher NewSearcher(IndexReader reader) => new(reader) { Similarity = similarity };
    }

    /// <summary>The background fill of the known ids (<see cref="KnownIdsFilledInBackground"/>); done for an index opened empty.</summary>
    internal Task KnownIdsFill { get; private set; } = Task.CompletedTask;

    public IndexState Opened { get; }

    public Task<IReadOnlyList<RefusedDocument>> WriteAsync(IReadOnlyCollection<string> deletes, IReadOnlyList<IndexedDocument> documents, CancellationToken ct = default)
    {
        var refused = new System.Collections.Concurrent.ConcurrentQueue<RefusedDocument>();
        void TryUpdate(IndexedDocument d)
        {
            // Lucene refuses a document with an immense term (an argument error that leaves the writer sound: the document is
            // dropped, nothing else): every such refusal is that document's, whatever field or name carried the term.
            if (VectorRefusal(d) is { } vectors) { refused.Enqueue(new RefusedDocument(d.Id, vectors)); return; }
            try { Update(d); }
            catch (ArgumentException e) { refused.Enqueue(new RefusedDocument(d.Id, $"the index engine refused the document: {e.Message}")); }
        }
        Guard(() =>
        {
            if (deletes.Count > 0) _writer.DeleteDocuments([.. deletes.Where(_known.MayHold).Select(id => new Term(LuceneDocuments.Id, id))]);
            // Lucene indexes on as many threads as call it (a segment in the making per thread): a large batch is split by id, so
            // updates of one id keep their order, and written from every core.
            var threads = documents.Count >= 512 ? Math.Min(Environment.ProcessorCount, 4) : 1;
            if (threads == 1) foreach (var d in documents) TryUpdate(d);
            else
            {
                var parts = new List<IndexedDocument>[threads];
                for (var i = 0; i < threads; i++) parts[i] = new List<IndexedDocument>(documents.Count / threads + 1);
                foreach (var d in documents) parts[(int)((uint)StringComparer.Ordinal.GetHashCode(d.Id) % (uint)threads)].Add(d);
                Parallel.For(0, threads, new ParallelOptions { MaxDegreeOfParallelism = threads }, i => { foreach (var d in parts[i]) TryUpdate(d); });
            }
        });
        return Task.FromResult<IReadOnlyList<RefusedDocument>>([.. refused]);
    }

    /// <summary>The dimensions of each vector field: set by the first vector the index holds, then every vector of the field must have them.</summary>
    private readonly ConcurrentDictionary<string, int> _dimensions = new(StringComparer.Ordinal);

    // Runs for every document written: indexed loops (foreach over the interfaces allocated an enumerator per entry), and the
    // lookup's closure only for a vector.
    private string? VectorRefusal(IndexedDocument d)
    {
        for (var e = 0; e < d.Entries.Count; e++)
        {
            var fields = d.Entries[e].Fields;
            for (var f = 0; f < fields.Count; f++)
                if (fields[f] is VectorField v && DimensionsRefusal(v) is { } refusal) return refusal;
        }
        return null;
    }

    private string? DimensionsRefusal(VectorField v)
    {
        var held = _dimensions.GetOrAdd(v.Name, name => HeldDimensions(name) ?? v.Values.Length);
        return held == v.Values.Length ? null : $"the vector field '{v.Name}' has {v.Values.Length} dimensions here; the index's '{v.Name}' vectors have {held}";
    }

    /// <summary>The dimensions of a vector field's vectors already in the index, if it holds any.</summary>
    private int? HeldDimensions(string field) => WithSearcher(0, searcher =>
    {
        var bytes = new BytesRef();
        foreach (var leaf in searcher.IndexReader.Leaves)
        {
            if (leaf.AtomicReader.GetBinaryDocValues(field + Vectors.VectorColumns.Suffix) is not { } values) continue;
            var has = leaf.AtomicReader.GetDocsWithField(field + Vectors.VectorColumns.Suffix);
            for (var doc = 0; doc < leaf.AtomicReader.MaxDoc; doc++)
            {
                if (!has.Get(doc)) continue;
                values.Get(doc, bytes);
                if (bytes.Length > 0) return (int?)(bytes.Length / 4);
            }
        }
        return null;
    });

    private void Update(IndexedDocument d)
    {
        var fields = LuceneDocuments.Fields();
        if (d.Entries.Count == 0)
        {
            if (_known.MayHold(d.Id)) _writer.DeleteDocuments(new Term(LuceneDocuments.Id, d.Id));
            return;
        }
        if (_known.Add(d.Id))
        {
            // Nothing to replace: no delete term, so no lookup of the id in every segment when the deletes are applied (a fifth of
            // each refresh's time while new documents streamed in, by a profile of the freshness benchmark).
            if (d.Entries.Count == 1) _writer.AddDocument(LuceneDocuments.Build(fields, d.Id, d.Entries[0]));
            else if (d.Entries.Count > 1) _writer.AddDocuments(d.Entries.Select(e => LuceneDocuments.Build(fields, d.Id, e)).ToList());
            return;
        }
        var term = new Term(LuceneDocuments.Id, d.Id);
        if (d.Entries.Count == 1) _writer.UpdateDocument(term, LuceneDocuments.Build(fields, d.Id, d.Entries[0]));
        else _writer.UpdateDocuments(term, d.Entries.Select(e => LuceneDocuments.Build(fields, d.Id, e)).ToList());
    }

    /// <summary>Deletions in the index or buffered for it: what adding an id the index never held must not leave (for tests).</summary>
    internal bool HasDeletions => _writer.HasDeletions();

    public Task CommitAsync(IReadOnlyDictionary<string, string> commitData, CancellationToken ct = default)
    {
        Guard(() =>
        {
            _writer.SetCommitData(new Dictionary<string, string>(commitData));
            _writer.Commit();
        });
        // Vector graphs are built with the commit (on the graph thread), not when the first search finds a segment without one.
        PrepareGraphs();
        return Task.CompletedTask;
    }

    public Task RefreshAsync(CancellationToken ct = default)
    {
        Guard(_searchers.MaybeRefreshBlocking);
        return Task.CompletedTask;
    }

    public Task DeleteAllAsync(CancellationToken ct = default)
    {
        Guard(() =>
        {
            _writer.DeleteAll();
            _dimensions.Clear();
            _known.Release();
            _known = new KnownIdFilter(budget: _engine.KnownIdsBudget);
            _searchers.MaybeRefreshBlocking();
        });
        return Task.CompletedTask;
    }

    public Task<IndexState> StateAsync(CancellationToken ct = default) => Task.FromResult(Guard(State));

    private IndexState State()
    {
        var data = new SortedDictionary<string, string>(_writer.CommitData ?? new Dictionary<string, string>(), StringComparer.Ordinal);
        var entries = WithSearcher(0, s => s.IndexReader.NumDocs - CountState(s));
        return new IndexState(data, entries, _engine.Columns.Stats(this), new KnownIdsStats(_known.Bytes, _known.Filling, _known.Full))
        {
            VectorGraphs = _vectors.Graphs?.Stats() ?? new(0, 0, 0),
        };
    }

    /// <summary>Live state entries: never counted as entries.</summary>
    private static int CountState(IndexSearcher searcher)
    {
        if (searcher.IndexReader.DocFreq(LuceneDocuments.StateTerm) == 0) return 0;
        var count = new TotalHitCountCollector();
        searcher.Search(new global::Lucene.Net.Search.TermQuery(LuceneDocuments.StateTerm), count);
        return count.TotalHits;
    }

    public long AcquireSnapshot()
    {
        var searcher = Guard(_searchers.Acquire);
        var id = Interlocked.Increment(ref _nextSnapshot);
        _snapshots[id] = searcher;
        return id;
    }

    public void ReleaseSnapshot(long snapshot)
    {
        if (!_snapshots.TryRemove(snapshot, out var searcher)) return;
        try { _searchers.Release(searcher); }
        catch (ObjectDisposedException) { }   // the index closed first: its readers went with it
    }

    public IEnumerable<StateEntry> ScanState()
    {
        var snapshot = AcquireSnapshot();
        try
        {
            var searcher = _snapshots[snapshot];
            var fields = new HashSet<string> { StateEntry.KeyField, StateEntry.SourceField, StateEntry.ValuesField };
            foreach (var leaf in searcher.IndexReader.Leaves)
            {
                var docs = leaf.AtomicReader.GetTermDocsEnum(LuceneDocuments.StateTerm);   // live documents only
                if (docs is null) continue;
                for (var doc = docs.NextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = docs.NextDoc())
                {
                    var d = leaf.AtomicReader.Document(doc, fields);
                    yield return new StateEntry(d.Get(StateEntry.KeyField), d.Get(StateEntry.SourceField), d.Get(StateEntry.ValuesField));
                }
            }
        }
        finally { ReleaseSnapshot(snapshot); }
    }

    public IEnumerable<(string Id, string Value)> ScanStored(string field)
    {
        var snapshot = AcquireSnapshot();
        try
        {
            var searcher = _snapshots[snapshot];
            var fields = new HashSet<string> { LuceneDocuments.Id, field };
            // Every field of an entry has its @exists term: the entries holding this one, live documents only.
            var holding = new Term(LuceneDocuments.Exists, field);
            foreach (var leaf in searcher.IndexReader.Leaves)
            {
                var docs = leaf.AtomicReader.GetTermDocsEnum(holding);
                if (docs is null) continue;
                for (var doc = docs.NextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = docs.NextDoc())
                {
                    var d = leaf.AtomicReader.Document(doc, fields);
                    yield return (d.Get(LuceneDocuments.Id), d.Get(field));
                }
            }
        }
        finally { ReleaseSnapshot(snapshot); }
    }

    public Task<SearchPage> SearchAsync(SearchRequest request, CancellationToken ct = default) =>
        Task.FromResult(WithSearcher(request.Snapshot, searcher => Search(searcher, request)));

    private SearchPage Search(IndexSearcher searcher, SearchRequest request)
    {
        var byScore = request.Sort.Any(s => s.Kind == SortKind.Score) || request.Explain;
        var query = WithoutState(searcher, LuceneQueries.Build(request.Query, _engine.Analyzer, scored: byScore, _vectors));
        // The document id last: the unique key that makes cursors survive refreshes and merges and mean the same in every shard.
        var fields = request.Sort.Select(SortOf).Append(new ColumnSort(LuceneDocuments.Id, false, _engine.Columns, this)).ToArray();
        var after = request.After is { } cursor ? SortValues.ToFieldDoc(cursor, fields) : null;
        // A page can't hold more hits than the index has entries: the collector's queue is allocated at its full size.
        var wanted = Math.Max(1, Math.Min(after is not null ? request.PageSize : (long)request.Skip + request.PageSize, Math.Max(1, searcher.IndexReader.MaxDoc)));
        var weight = searcher.CreateNormalizedWeight(query);
        // Every hit counted (totalResults exact); scores only where they sort.
        var collector = TopFieldCollector.Create(new Sort(fields), (int)wanted, after, fillFields: true, trackDocScores: byScore, trackMaxScore: false,
            docsScoredInOrder: !weight.ScoresDocsOutOfOrder);
        searcher.Search(query, collector);
        var top = collector.GetTopDocs();
        var from = after is not null ? 0 : Math.Min(request.Skip, top.ScoreDocs.Length);
        ISet<string>? stored = request.StoredFields is null ? null : new HashSet<string>(request.StoredFields) { LuceneDocuments.Id };
        var hits = new SearchHit[top.ScoreDocs.Length - from];
        for (var i = from; i < top.ScoreDocs.Length; i++)
        {
            var hit = (FieldDoc)top.ScoreDocs[i];
            var doc = stored is null ? searcher.Doc(hit.Doc) : searcher.Doc(hit.Doc, stored);
            hits[i - from] = new SearchHit(doc.Get(LuceneDocuments.Id), float.IsNaN(hit.Score) ? 0f : hit.Score, StoredValues(doc), SortValues.ToCursor(hit))
            {
                Explanation = request.Explain ? searcher.Explain(query, hit.Doc).ToString() : null,
            };
        }
        return new SearchPage(top.TotalHits, hits);
    }

    private global::Lucene.Net.Search.SortField SortOf(Contracts.Search.SortField s) => s.Kind switch
    {
        SortKind.Score => new global::Lucene.Net.Search.SortField(null, SortFieldType.SCORE, !s.Descending),
        SortKind.Alphanumeric => KeyedColumnSort.Alphanumeric(s.Field, s.Descending, _engine.Columns, this),
        SortKind.Random => KeyedColumnSort.Random(s.Field, s.Descending, s.Seed ?? "", _engine.Columns, this),
        SortKind.Double when s.Field.EndsWith(EntryFields.Number, StringComparison.Ordinal) =>
            new ColumnSort(s.Field, s.Descending, _engine.Columns, this, exact: s.Field[..^EntryFields.Number.Length] + EntryFields.Integer),
        _ => new ColumnSort(s.Field, s.Descending, _engine.Columns, this),
    };

    private static Dictionary<string, IReadOnlyList<object>> StoredValues(Document doc)
    {
        var values = new Dictionary<string, List<object>>();
        foreach (var f in doc.Fields)
        {
            if (f.Name == LuceneDocuments.Id) continue;
            object value = f.NumericType switch
            {
                NumericFieldType.INT64 => f.GetInt64Value()!.Value,
                NumericFieldType.DOUBLE => f.GetDoubleValue()!.Value,
                _ when f.GetBinaryValue() is { } b => b.Offset == 0 && b.Length == b.Bytes.Length ? b.Bytes : b.Bytes.AsSpan(b.Offset, b.Length).ToArray(),
                _ => f.GetStringValue(),
            };
            if (!values.TryGetValue(f.Name, out var list)) values[f.Name] = list = [];
            list.Add(value);
        }
        return values.ToDictionary(v => v.Key, v => (IReadOnlyList<object>)v.Value);
    }

    public Task<FacetCounts> FacetsAsync(SearchQuery query, IReadOnlyList<FacetSpec> facets, long snapshot = 0, CancellationToken ct = default) =>
        Task.FromResult(WithSearcher(snapshot, searcher =>
        {
            var counter = new FacetCounter(_engine.Columns, this, searcher, facets, q => LuceneQueries.Build(q, _engine.Analyzer, scored: false));
            searcher.Search(WithoutState(searcher, LuceneQueries.Build(query, _engine.Analyzer, scored: false, _vectors)), counter);
            return counter.Result();
        }));

    public IReadOnlyList<string> Highlight(SearchQuery query, HighlightSpec spec, IReadOnlyList<string> texts) =>
        Guard(() => Text.Highlights.Of(LuceneQueries.Build(query, _engine.Analyzer, scored: true), spec, texts, _engine.Analyzer));

    public IReadOnlyList<TermSuggestion> Suggest(SuggestSpec spec, long snapshot = 0) =>
        WithSearcher(snapshot, searcher => Text.Suggestions.Of(searcher.IndexReader, spec));

    public IReadOnlyList<float[]> VectorsOf(string field, string id) => WithSearcher(0, searcher =>
    {
        var found = new List<float[]>();
        var bytes = new global::Lucene.Net.Util.BytesRef();
        foreach (var leaf in searcher.IndexReader.Leaves)
        {
            var reader = leaf.AtomicReader;
            if (reader.GetBinaryDocValues(field + Vectors.VectorColumns.Suffix) is not { } values) continue;
            var has = reader.GetDocsWithField(field + Vectors.VectorColumns.Suffix);
            var docs = reader.GetTermDocsEnum(new global::Lucene.Net.Index.Term(LuceneDocuments.Id, id));
            if (docs is null) continue;
            for (var doc = docs.NextDoc(); doc != global::Lucene.Net.Search.DocIdSetIterator.NO_MORE_DOCS; doc = docs.NextDoc())
            {
                if (!has.Get(doc)) continue;
                values.Get(doc, bytes);
                if (bytes.Length > 0) found.Add(System.Runtime.InteropServices.MemoryMarshal.Cast<byte, float>(bytes.Bytes.AsSpan(bytes.Offset, bytes.Length)).ToArray());
            }
        }
        return found;
    });

    public IReadOnlyList<string> FieldNames() => WithSearcher(0, searcher =>
        searcher.IndexReader.Leaves.SelectMany(l => l.AtomicReader.FieldInfos.Select(f => f.Name)).Distinct().Order(StringComparer.Ordinal).ToList());

    /// <summary>Searches never see state entries; the clause costs nothing on an index that has none.</summary>
    private static Query WithoutState(IndexSearcher searcher, Query query)
    {
        if (searcher.IndexReader.DocFreq(LuceneDocuments.StateTerm) == 0) return query;
        return new BooleanQuery
        {
            { query, Occur.MUST },
            { new global::Lucene.Net.Search.TermQuery(LuceneDocuments.StateTerm), Occur.MUST_NOT },
        };
    }

    /// <summary>Runs <paramref name="read"/> on a held snapshot, or on the current searcher acquired for it.</summary>
    private T WithSearcher<T>(long snapshot, Func<IndexSearcher, T> read)
    {
        if (snapshot != 0)
        {
            if (!_snapshots.TryGetValue(snapshot, out var held)) throw new IndexEngineException($"snapshot {snapshot} was released");
            return Guard(() => read(held));
        }
        var searcher = Guard(_searchers.Acquire);
        try { return Guard(() => read(searcher)); }
        finally { _searchers.Release(searcher); }
    }

    /// <summary>
    /// Lucene's refusals (too many clauses, a closed index, a bad cursor, an I/O error) as the engine's, in Magpie's words:
    /// a client never sees Lucene's exception types or messages; the log keeps them for operators.
    /// </summary>
    private T Guard<T>(Func<T> action)
    {
        if (_closed) throw new IndexEngineException("the index is closed");
        try { return action(); }
        catch (Exception e) when (e is BooleanQuery.TooManyClausesException or ObjectDisposedException or ArgumentException or InvalidOperationException or IOException)
        {
            if (_closed || e is ObjectDisposedException) throw new IndexEngineException("the index is closed (reset, redefined or shutting down)", e);
            if (e is BooleanQuery.TooManyClausesException)
                throw new IndexEngineException($"the query expands to more than {BooleanQuery.MaxClauseCount:N0} terms (a prefix, range or list over too many values): narrow it", e);
            _engine.Log.LogWarning(e, "index refused an operation");
            throw new IndexEngineException(e is IOException ? "the index could not be read or written (see the server log)" : "the index could not run this (see the server log)", e);
        }
    }

    private void Guard(Action action) => Guard(() => { action(); return 0; });

    public void Close()
    {
        if (_closed) return;
        _closed = true;
        _known.Release();   // first: a failed rollback below must not keep the filter's share of the engine's budget
        foreach (var id in _snapshots.Keys) ReleaseSnapshot(id);
        _searchers.Dispose();
        // Rollback, not Dispose: 4.8 commits on dispose, and uncommitted writes must never become durable beside an older position.
        // The writer does not own its directory: closing that unlinks the files it still deletes in the background (IndexDirectory).
        try { _writer.Rollback(); }
        finally { _files.Dispose(); }
        _engine.Columns.DropIndex(this);
        _engine.Closed(this);
    }
}
