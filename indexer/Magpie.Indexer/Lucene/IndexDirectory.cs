using System.Threading.Channels;
using Lucene.Net.Store;
using Lucene.Net.Util;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// The directory every index lives in: <see cref="NIOFSDirectory"/> (what the issue and lucenenet #1013/#1151 call for: 4.8's
/// MMapDirectory crashes and crawls under concurrent searches), with three changes measured on this workload.
/// </summary>
internal sealed class IndexDirectory(DirectoryInfo path) : NIOFSDirectory(path)
{
    public const int PostingsBuffer = 8 * 1024;

    private static readonly string[] Streamed = [".doc", ".pos", ".pay"];

    /// <summary>
    /// Stored fields are read a compressed chunk (16 KiB) at a time: with the 1 KiB default, reading one hit's stored values took
    /// 16 positional reads (and as many <c>fstat</c>s) of the shared file handle.
    /// </summary>
    public const int StoredFieldsBuffer = 16 * 1024;

    /// <summary>
    /// A larger read buffer for the files a query streams through: postings (8 KiB; 16 KiB, or the terms dictionary too, measured
    /// slower). The default 1 KiB buffer makes every 1 KiB of a term's postings one locked positional read of the shared file handle.
    /// </summary>
    private IndexInput OpenBuffered(string name, IOContext context)
    {
        var input = base.OpenInput(name, context);
        // Clones (one per search per segment) keep the size; merges set their own.
        if (input is BufferedIndexInput buffered && context.Context != IOContext.UsageContext.MERGE)
        {
            if (Streamed.Any(name.EndsWith)) buffered.SetBufferSize(PostingsBuffer);
            else if (name.EndsWith(".fdt", StringComparison.Ordinal)) buffered.SetBufferSize(StoredFieldsBuffer);
        }
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

    /// <summary>
    /// Files deleted but not yet unlinked. Lucene.Net 4.8 deletes the files a commit no longer needs inside
    /// <c>IndexWriter.FinishCommit</c>, holding the writer's lock, which every refresh needs: 100–440 ms of unlinks (120–370 files
    /// at ~1 ms each here) held each refresh behind every commit, the freshness tail (a trace showed it). Lucene never writes a name
    /// twice, so a file that is gone for Lucene can be unlinked a moment later on a task of its own, as long as this directory
    /// answers as if it were gone already.
    /// </summary>
    private readonly HashSet<string> _deleting = new(StringComparer.Ordinal);
    private readonly System.Threading.Lock _deletingLock = new();
    /// <summary>Held while one file is unlinked, so a name created again (never by Lucene) is unlinked before it is written.</summary>
    private readonly System.Threading.Lock _unlinkGate = new();
    private readonly Channel<string> _toUnlink = Channel.CreateUnbounded<string>(new UnboundedChannelOptions { SingleReader = true });
    private Task? _unlinking;

    public override void DeleteFile(string name)
    {
        EnsureOpen();
        lock (_deletingLock)
        {
#pragma warning disable CS0618 // FileExists: obsolete in Lucene.Net, still what tells a missing file
            if (_deleting.Contains(name) || !base.FileExists(name)) throw new FileNotFoundException($"cannot delete {name}: it does not exist");
#pragma warning restore CS0618
            _deleting.Add(name);
            _unlinking ??= Task.Run(UnlinkAsync);
        }
        _toUnlink.Writer.TryWrite(name);
    }

    private async Task UnlinkAsync()
    {
        await foreach (var name in _toUnlink.Reader.ReadAllAsync()) Unlink(name);
    }

    private void Unlink(string name)
    {
        lock (_unlinkGate)
        {
            lock (_deletingLock) if (!_deleting.Contains(name)) return;   // created again meanwhile: unlinked then
            // A file that can't be unlinked now is left: the next IndexWriter opened here deletes every file no commit names.
            try { base.DeleteFile(name); }
            catch (IOException) { }
            catch (UnauthorizedAccessException) { }
            lock (_deletingLock) _deleting.Remove(name);
        }
    }

    private bool Deleting(string name)
    {
        lock (_deletingLock) return _deleting.Contains(name);
    }

    [Obsolete("Lucene.Net marks it obsolete; its IndexWriter and NRTCachingDirectory still ask it")]
    public override bool FileExists(string name) => !Deleting(name) && base.FileExists(name);

    /// <summary>
    /// Listed under the unlink gate: a file unlinked (and so forgotten as deleting) between the listing and the filter would
    /// otherwise be listed though gone.
    /// </summary>
    public override string[] ListAll()
    {
        lock (_unlinkGate)
        {
            var names = base.ListAll();
            lock (_deletingLock) return _deleting.Count == 0 ? names : names.Where(n => !_deleting.Contains(n)).ToArray();
        }
    }

    public override long FileLength(string name) =>
        Deleting(name) ? throw new FileNotFoundException($"{name} does not exist") : base.FileLength(name);

    public override IndexInput OpenInput(string name, IOContext context) =>
        Deleting(name) ? throw new FileNotFoundException($"{name} does not exist") : OpenBuffered(name, context);

    public override IndexOutput CreateOutput(string name, IOContext context)
    {
        if (Deleting(name)) Unlink(name);
        return base.CreateOutput(name, context);
    }

    /// <summary>Unlinks what is still waiting, then closes: a directory opened here next sees only live files.</summary>
    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            _toUnlink.Writer.TryComplete();
            Task? unlinking;
            lock (_deletingLock) unlinking = _unlinking;
            unlinking?.GetAwaiter().GetResult();
        }
        base.Dispose(disposing);
    }
}
