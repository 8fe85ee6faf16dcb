using Lucene.Net.Analysis.Core;
using Lucene.Net.Analysis.Standard;
using Lucene.Net.Analysis.Util;
using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Search.Similarities;
using Lucene.Net.Store;
using Lucene.Net.Util;
using Magpie.Indexer.Engine;
using Microsoft.Extensions.Logging;
using Analyzer = Lucene.Net.Analysis.Analyzer;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// Lucene.Net 4.8, in-process: one <see cref="IndexWriter"/> on an <see cref="NIOFSDirectory"/> and one
/// <see cref="SearcherManager"/> per index (<see cref="LuceneIndex"/>), and the facet column cache all indexes share.
/// </summary>
public sealed class LuceneEngine(ILogger log, long facetCacheBytes = 256L << 20) : IIndexEngine
{
    public const string EngineName = "lucene.net-4.8";

    internal const LuceneVersion Version = LuceneVersion.LUCENE_48;

    public string Name => EngineName;

    /// <summary>
    /// StandardAnalyzer without stop words: 4.8's drops English ones by default, Lucene 8's (what Magpie indexed with before)
    /// does not, and <c>search(Title, 'the')</c> should find titles with "the".
    /// </summary>
    internal Analyzer Analyzer { get; } = new StandardAnalyzer(Version, CharArraySet.EMPTY_SET);

    /// <summary>BM25, as Lucene 8 scored (4.8's default is TF-IDF): search() orders stay what they were.</summary>
    internal Similarity Similarity { get; } = new BM25Similarity();

    internal FacetColumns Columns { get; } = new(facetCacheBytes);

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
        catch (CorruptIndexException e)
        {
            // IndexFormatTooNewException (a folder the Java host wrote with Lucene 8) and IndexFormatTooOldException are
            // CorruptIndexExceptions too: whatever is there can't be read, and the change feed has everything it held.
            log.LogWarning("index folder {Directory} was not written by {Engine} or is damaged ({Reason}); rebuilding it from the change feed",
                directory, EngineName, e.GetType().Name);
            return Open(directory, create: true);
        }
    }

    private LuceneIndex Open(string directory, bool create)
    {
        var files = new NIOFSDirectory(new DirectoryInfo(directory));
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
            };
            return new LuceneIndex(this, new IndexWriter(files, config));
        }
        catch
        {
            files.Dispose();
            throw;
        }
    }

    public void Dispose() => Analyzer.Dispose();
}
