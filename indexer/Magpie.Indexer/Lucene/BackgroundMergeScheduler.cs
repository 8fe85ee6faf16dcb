using System.Runtime.InteropServices;
using Lucene.Net.Index;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// Lucene's concurrent merge scheduler with its merge threads at a lower CPU priority (Linux nice +10), so a merge takes what
/// the writes and refreshes leave over rather than half of it. After a load, merging its segments held one of two cores for
/// ~20 s, and the writes made then waited up to 0.4–0.6 s to become searchable where later ones waited 0.23 s (p99,
/// docs/BENCHMARKS.md). Merges still get a share when the cores are busy, and Lucene stalls the writer when too many wait
/// (<see cref="ConcurrentMergeScheduler.MaxMergeCount"/>), so they cannot fall behind for good. They still share memory and cache
/// with the refresh: with merges off, the first 20 s after a load were fresher again (p99 727 → 163 ms). .NET's thread priorities
/// leave the nice value alone on Linux, hence the system call; elsewhere this is the plain scheduler. Lucene re-prioritises merge
/// threads as merges come and go (<see cref="ConcurrentMergeScheduler.MergeThread.SetThreadPriority"/>); that is ignored here, since
/// .NET's setter resets the thread's scheduling policy. SCHED_IDLE instead of nice was tried: starved merges stalled the refresh
/// that asked for one more, and a write stayed unsearchable for over 30 s (docs/BENCHMARKS.md).
/// </summary>
internal sealed class BackgroundMergeScheduler : ConcurrentMergeScheduler
{
    internal const int MergeNice = 10;

    protected override MergeThread GetMergeThread(IndexWriter writer, MergePolicy.OneMerge merge)
    {
        lock (this) return new LoweredMergeThread(this, writer, merge) { IsBackground = true, Name = "Lucene Merge Thread #" + m_mergeThreadCount++ };
    }

    private sealed class LoweredMergeThread(ConcurrentMergeScheduler scheduler, IndexWriter writer, MergePolicy.OneMerge merge)
        : MergeThread(scheduler, writer, merge)
    {
        public override void Run()
        {
            if (OperatingSystem.IsLinux()) LowerThisThread();
            base.Run();
        }

        public override void SetThreadPriority(ThreadPriority priority) { }
    }

    /// <summary>
    /// Lowers the calling thread's priority by <see cref="MergeNice"/> steps (capped at 19). Only this thread's: on Linux the
    /// nice value is per thread, and <c>nice</c> changes the caller's.
    /// </summary>
    internal static void LowerThisThread()
    {
        try { _ = nice(MergeNice); }
        catch (Exception e) when (e is DllNotFoundException or EntryPointNotFoundException) { }
    }

    [DllImport("libc", SetLastError = true)]
    private static extern int nice(int increment);
}
