using Lucene.Net.Store;
using Lucene.Net.Util;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// The directory every index lives in: <see cref="NIOFSDirectory"/> (what the issue and lucenenet #1013/#1151 call for: 4.8's
/// MMapDirectory crashes and crawls under concurrent searches), with two changes measured on this workload.
/// </summary>
internal sealed class IndexDirectory(DirectoryInfo path) : NIOFSDirectory(path)
{
    public const int PostingsBuffer = 8 * 1024;

    private static readonly string[] Streamed = [".doc", ".pos", ".pay"];

    /// <summary>
    /// A larger read buffer for the files a query streams through: postings (8 KiB; 16 KiB, or the terms dictionary too, measured
    /// slower). The default 1 KiB buffer makes every 1 KiB of a term's postings one locked positional read of the shared file handle.
    /// </summary>
    public override IndexInput OpenInput(string name, IOContext context)
    {
        var input = base.OpenInput(name, context);
        // Clones (one per search per segment) keep the size; merges set their own.
        if (input is BufferedIndexInput buffered && context.Context != IOContext.UsageContext.MERGE && Streamed.Any(name.EndsWith))
            buffered.SetBufferSize(PostingsBuffer);
        return input;
    }

    /// <summary>
    /// A commit's fsyncs without holding the directory's lock. Lucene.Net 4.8.0-beta00017 fsyncs every file of a commit while
    /// holding the lock that every file close (each flush and merge) and delete also takes, so a refresh that flushed while
    /// a commit was syncing waited for all of it: refreshes of 0.3–1 s behind commits, the freshness p99 at 1M posts
    /// (profile: <c>Monitor.Enter</c> in <c>FSIndexOutput.Dispose</c> under <c>IndexWriter.GetReader</c>). Java's Lucene syncs
    /// outside any lock, as here: the files a commit syncs are closed before it starts and are not deleted while it references them.
    /// </summary>
    public override void Sync(ICollection<string> names)
    {
        EnsureOpen();
        var toSync = new HashSet<string>(names);
        lock (m_syncLock) toSync.IntersectWith(m_staleFiles);
        foreach (var name in toSync) Fsync(name);
        // The directory itself too (new names), but only if any file was synced: else it may not exist yet.
        if (toSync.Count > 0) IOUtils.Fsync(m_directory.FullName, true);
        lock (m_syncLock) m_staleFiles.ExceptWith(toSync);
    }
}
