namespace Magpie.Indexer.Indexing;

/// <summary>One writer batch: how many documents and entries, and where its time went (the seed's "index batch stats").</summary>
/// <remarks><c>ReduceMs</c>: the reduce (map/reduce indexes; in Kafka mode's map side, publishing to the mapped topic), on the write loop
/// before Lucene; <c>LuceneMs</c>: write and NRT refresh (searchable); <c>CommitMs</c>: the commit, 0 for batches that shared a later one.</remarks>
public sealed record IndexBatchStats(DateTimeOffset At, int Changes, int Documents, int Entries, double ReadMs, double MapMs, double LuceneMs, double CommitMs,
    double ReduceMs = 0);

public sealed record IndexError(DateTimeOffset At, string DocumentId, string Message);

/// <remarks><c>Refreshes</c> and <c>RefreshMs</c>: how many times the worker made its writes searchable, and the time those refreshes
/// took (Lucene's flush of each new segment), since it started: what a load's segment sizes and flush cost come from.</remarks>
public sealed record IndexStatusSnapshot(long IndexedEtag, long Entries, long Batches, long DocumentsIndexed, long ErrorCount,
    IReadOnlyList<IndexError> Errors, IReadOnlyList<IndexBatchStats> RecentBatches, string? Failure, long Refreshes, double RefreshMs);

/// <summary>Live progress of one index, written by its worker, read by status and stats requests.</summary>
public sealed class IndexStatus(string index) : Stages.IIndexErrors
{
    private const int Kept = 20;

    /// <summary>Failed documents (or reduce keys) kept by id with their latest error, for the status and a retry; more still count.</summary>
    public const int KeptFailures = 10_000;

    private readonly Lock _lock = new();
    private readonly List<IndexBatchStats> _batches = [];
    private long _indexedEtag, _entries, _batchCount, _documents, _errorCount, _attempts, _refreshes;
    private double _refreshMs;
    private string? _failure;

    /// <summary>
    /// RavenDB's rule for an index that fails most of what it is given: once it has tried <see cref="ErrorSampleSize"/>
    /// documents (or reduce keys), more than <see cref="ErrorRatioLimit"/> of them failing marks it errored: it stops
    /// indexing (its results would be mostly missing) until it is reset or redefined.
    /// </summary>
    public const int ErrorSampleSize = 500;
    public const double ErrorRatioLimit = 0.15;

    /// <summary>Null while healthy; why the index is errored once too many of its documents failed.</summary>
    public string? Errored
    {
        get
        {
            lock (_lock)
                return _attempts >= ErrorSampleSize && _errorCount > ErrorRatioLimit * _attempts
                    ? string.Create(System.Globalization.CultureInfo.InvariantCulture, $"errored: {_errorCount:N0} of {_attempts:N0} documents failed (over {ErrorRatioLimit:P0}); fix the documents and POST /indexes/{{name}}/errors/retry, or fix the definition, or POST /indexes/{{name}}/reset")
                    : null;
        }
    }

    public void Attempted(int count) { lock (_lock) _attempts += count; }

    public long IndexedEtag { get { lock (_lock) return _indexedEtag; } }

    public void Resumed(long etag, long entries) { lock (_lock) { _indexedEtag = etag; _entries = entries; } }

    /// <summary>A refresh (of <paramref name="ms"/>) made everything up to <paramref name="etag"/> searchable; the index now holds <paramref name="entries"/>.</summary>
    public void Refreshed(long etag, long entries, double ms)
    {
        lock (_lock) { _indexedEtag = Math.Max(_indexedEtag, etag); _entries = entries; _refreshes++; _refreshMs += ms; }
    }

    /// <summary>Records a written batch (searchable with the next refresh, <see cref="Refreshed"/>); returns its number, for <see cref="Committed"/>.</summary>
    public long Batch(IndexBatchStats stats)
    {
        lock (_lock)
        {
            _batchCount++;
            _documents += stats.Documents;
            _failure = null;
            Keep(_batches, stats);
            IndexingMetrics.Batch(index, stats);
            return _batchCount;
        }
    }

    /// <summary>Batch number <paramref name="batch"/> was committed, which took <paramref name="ms"/> (batches between commits show 0).</summary>
    public void Committed(long batch, double ms)
    {
        IndexingMetrics.Committed(index, ms);
        lock (_lock)
        {
            var i = _batches.Count - 1 - (int)(_batchCount - batch);
            if (i >= 0 && i < _batches.Count) _batches[i] = _batches[i] with { CommitMs = ms };
        }
    }

    /// <summary>Ids (documents, reduce keys) failing now, each with its latest error: <c>errorCount</c> counts them, not their failed changes.</summary>
    private readonly Dictionary<string, IndexError> _failures = new(StringComparer.Ordinal);

    /// <summary>Further ids failing now, past <see cref="KeptFailures"/>: kept without their messages so each is counted once and uncounted when it passes.</summary>
    private readonly HashSet<string> _unkept = new(StringComparer.Ordinal);
    private long _failuresVersion;

    /// <summary>Most failing ids tracked at all (each costs its id): an index with more is errored long before (<see cref="ErrorRatioLimit"/>).</summary>
    public const int MaxTrackedFailures = 1_000_000;

    public void Error(string documentId, string message)
    {
        IndexingMetrics.Error(index);
        lock (_lock)
        {
            if (_failures.ContainsKey(documentId) || _failures.Count < KeptFailures && !_unkept.Contains(documentId))
                _failures[documentId] = new IndexError(DateTimeOffset.UtcNow, documentId, message);
            else if (_unkept.Count < MaxTrackedFailures) _unkept.Add(documentId);
            _errorCount = _failures.Count + _unkept.Count;
            _failuresVersion++;
        }
    }

    public void Cleared(string documentId)
    {
        lock (_lock)
        {
            if (!_failures.Remove(documentId) && !_unkept.Remove(documentId)) return;
            _errorCount = _failures.Count + _unkept.Count;
            _failuresVersion++;
        }
    }

    /// <summary>The ids failing now (documents and reduce keys), those kept with their errors and the rest by id, the documents tried, and a version that moves with every change.</summary>
    public FailureSet Failures()
    {
        lock (_lock) return new([.. _failures.Values], [.. _unkept], _attempts, _failuresVersion);
    }

    public sealed record FailureSet(IReadOnlyList<IndexError> Failures, IReadOnlyList<string> Unkept, long Attempts, long Version)
    {
        public long Count => Failures.Count + Unkept.Count;
        public IEnumerable<string> Ids => Failures.Select(f => f.DocumentId).Concat(Unkept);
    }

    /// <summary>Failures kept with the index (read back when it resumes from its commit after a restart), and how many documents it had tried.</summary>
    public void Restore(IReadOnlyList<IndexError> failures, IReadOnlyList<string> unkept, long attempts)
    {
        lock (_lock)
        {
            _failures.Clear();
            _unkept.Clear();
            foreach (var f in failures) if (_failures.Count < KeptFailures) _failures[f.DocumentId] = f; else _unkept.Add(f.DocumentId);
            foreach (var id in unkept) if (_unkept.Count < MaxTrackedFailures && !_failures.ContainsKey(id)) _unkept.Add(id);
            _errorCount = _failures.Count + _unkept.Count;
            // The share that failed is of what the index tried, before the restart too.
            _attempts = Math.Max(attempts, _errorCount);
            _failuresVersion++;
        }
    }

    /// <summary>The worker itself stopped on something other than a document (Lucene gone, feed failed); it retries.</summary>
    public void Failed(string message) { lock (_lock) _failure = message; }

    public IndexStatusSnapshot Snapshot()
    {
        lock (_lock)
            return new(_indexedEtag, _entries, _batchCount, _documents, _errorCount, [.. _failures.Values.OrderByDescending(e => e.At).Take(Kept)],
                [.. _batches], _failure, _refreshes, _refreshMs);
    }

    private static void Keep<T>(List<T> recent, T item)
    {
        recent.Add(item);
        if (recent.Count > Kept) recent.RemoveAt(0);
    }
}
