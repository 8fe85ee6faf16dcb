using Lucene.Net.Codecs;
using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Search.Similarities;
using Lucene.Net.Store;
using Lucene.Net.Util;
using Magpie.Indexer.Engine;
using Microsoft.Extensions.Logging;
using Analyzer = Lucene.Net.Analysis.Analyzer;

using Magpie.Indexer.Lucene.Text;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// Lucene.Net 4.8, in-process: one <see cref="IndexWriter"/> on an <see cref="NIOFSDirectory"/> and one
/// <see cref="SearcherManager"/> per index (<see cref="LuceneIndex"/>), and the facet column cache all indexes share.
/// </summary>
public sealed class LuceneEngine(ILogger log, long facetCacheBytes = 256L << 20, long knownIdsBytes = 512L << 20,
    int vectorGraphMinimum = LuceneEngine.DefaultVectorGraphMinimum) : IIndexEngine
{
    /// <summary>Where an index logs what Lucene said when it refused something, for operators (clients get Magpie's words).</summary>
    internal ILogger Log => log;

    /// <summary>
    /// The engine and the shape of the entries it writes: an index committed under another name is rebuilt from the change feed
    /// when it opens (<c>IndexWorker.ResumeAsync</c>). "/2": integers past 2^53 are also kept exactly (<c>F@long</c>), which
    /// entries written before lack — their queries would miss them.
    /// </summary>
    public const string EngineName = "lucene.net-4.8/2";

    internal const LuceneVersion Version = Text.TextAnalyzer.Version;

    public string Name => EngineName;

    /// <summary>
    /// StandardAnalyzer without stop words: 4.8's drops English ones by default, Lucene 8's (what Magpie indexed with before)
    /// does not, and <c>search(Title, 'the')</c> should find titles with "the". Its tokens, lower-cased faster (<see cref="TextAnalyzer"/>).
    /// </summary>
    internal Analyzer Analyzer { get; } = new TextAnalyzer();

    /// <summary>BM25, as Lucene 8 scored (4.8's default is TF-IDF): search() orders stay what they were.</summary>
    internal Similarity Similarity { get; } = new BM25Similarity();

    internal FacetColumns Columns { get; } = new(facetCacheBytes);

    /// <summary>Vectors a segment holds before a nearest-neighbour graph is built for it (<see cref="Vectors.VectorGraphs"/>; 0: never).</summary>
    public const int DefaultVectorGraphMinimum = 5_000;

    internal int VectorGraphMinimum => vectorGraphMinimum;

    /// <summary>The memory every index's filter of known ids (<see cref="KnownIdFilter"/>) may take together.</summary>
    internal KnownIdsBudget KnownIdsBudget { get; } = new(knownIdsBytes);

    private readonly Dictionary<string, LuceneIndex> _open = [];

    /// <summary>
    /// The index in <paramref name="directory"/>: the one already open there (a worker restarted on the same folder shares
    /// its writer; Lucene allows one per folder), or opened now.
    /// </summary>
    public IIndexPersistence Open(string directory)
    {
        var path = Path.GetFullPath(directory);
        lock (_open)
        {
            if (_open.TryGetValue(path, out var open)) return open;
            System.IO.Directory.CreateDirectory(path);
            return _open[path] = OpenOrRebuild(path);
        }
    }

    /// <summary>The index closed: the next <see cref="Open"/> of its folder opens it anew.</summary>
    internal void Closed(LuceneIndex index)
    {
        lock (_open)
            foreach (var (path, open) in _open)
                if (open == index) { _open.Remove(path); return; }
    }

    private LuceneIndex OpenOrRebuild(string directory)
    {
        try { return Open(directory, create: false); }
        catch (IOException e) when (ForeignFormat(directory, e) is { } reason)
        {
            // The change feed has everything the folder held: the worker finds no position and rebuilds from the beginning.
            log.LogWarning("index folder {Directory} was not written by {Engine} ({Reason}); rebuilding it from the change feed", directory, EngineName, reason);
            foreach (var file in System.IO.Directory.GetFiles(directory)) File.Delete(file);
            return Open(directory, create: true);
        }
    }

    /// <summary>
    /// Why a folder that failed to open can't be read by this engine, or null for a failure that is not about its format (a lock
    /// held, a disk error): segments written by a newer Lucene (Java's Lucene 8 writes segments format 10; 4.8 reads up to 3, and
    /// Lucene.Net reports it as a plain IOException) or files Lucene calls corrupt.
    /// </summary>
    private static string? ForeignFormat(string directory, IOException failure)
    {
        if (failure is CorruptIndexException) return $"unreadable: {failure.Message}";
        var segments = System.IO.Directory.GetFiles(directory, "segments_*").OrderByDescending(File.GetLastWriteTimeUtc).FirstOrDefault();
        if (segments is null) return null;
        try
        {
            using var stream = File.OpenRead(segments);
            Span<byte> header = stackalloc byte[4];
            stream.ReadExactly(header);
            if (System.Buffers.Binary.BinaryPrimitives.ReadInt32BigEndian(header) != CodecUtil.CODEC_MAGIC) return null;
            var name = new byte[stream.ReadByte()];   // a VInt under 128: "segments"
            stream.ReadExactly(name);
            stream.ReadExactly(header);
            var version = System.Buffers.Binary.BinaryPrimitives.ReadInt32BigEndian(header);
            return version > SegmentInfos.VERSION_48 ? $"segments format {version}, newer than Lucene 4.8's {SegmentInfos.VERSION_48}: written by a newer Lucene" : null;
        }
        catch (IOException) { return null; }
    }

    private LuceneIndex Open(string directory, bool create)
    {
        // Small segments (what a refresh flushes while caught up, and their first merges) stay in memory until a commit writes them
        // out or a merge folds them away: a refresh then creates no files (freshness p50 36 → 15 ms at 6,000 docs/s over 600k posts),
        // Lucene's advice for near-real-time search. Bounded per index; the commit syncs them to disk like any other file.
        var files = new NRTCachingDirectory(new IndexDirectory(new DirectoryInfo(directory)), maxMergeSizeMB: 4, maxCachedMB: 32);
        try
        {
            var config = new IndexWriterConfig(Version, Analyzer)
            {
                OpenMode = create ? OpenMode.CREATE : OpenMode.CREATE_OR_APPEND,
                Similarity = Similarity,
                RAMBufferSizeMB = 64,
                // Separate files rather than compound ones: merges and flushes write each byte once.
                UseCompoundFile = false,
                MergePolicy = new TieredMergePolicy { NoCFSRatio = 0 },
                MergeScheduler = MergeScheduler(),
            };
            // Lucene's account of flushes, merges and commits, for operators who turn the engine's log to Trace.
            if (log.IsEnabled(LogLevel.Trace)) config.SetInfoStream(new LoggedInfoStream(log, Path.GetFileName(directory)));
            var warmer = new ColumnWarmer(Columns);
            config.MergedSegmentWarmer = warmer;
            return warmer.Owner = new LuceneIndex(this, new IndexWriter(files, config), Path.Combine(directory, "graphs"));
        }
        catch
        {
            files.Dispose();
            throw;
        }
    }

    /// <summary>
    /// One merge thread, but up to 6 merges may wait for it before Lucene stalls the thread that asked for one. The default
    /// (2) stalled the refresh behind a large merge for over a second while small segments queued up: a document written
    /// during a big merge waited that long to become searchable (freshness p99 1.4 s at 1M posts). Elasticsearch allows the
    /// thread count + 5 for the same reason.
    /// </summary>
    private static ConcurrentMergeScheduler MergeScheduler()
    {
        var scheduler = new BackgroundMergeScheduler();
        scheduler.SetMaxMergesAndThreads(6, 1);
        return scheduler;
    }

    /// <summary>Warms a merged segment's columns (<see cref="FacetColumns.Warm"/>) for the index it belongs to, once that is open.</summary>
    private sealed class ColumnWarmer(FacetColumns columns) : IndexWriter.IndexReaderWarmer
    {
        public LuceneIndex? Owner { get; set; }

        public override void Warm(AtomicReader reader)
        {
            if (Owner is { } owner) columns.Warm(owner, reader);
        }
    }

    public void Dispose() => Analyzer.Dispose();
}
