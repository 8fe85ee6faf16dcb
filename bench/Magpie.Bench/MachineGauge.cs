using System.Diagnostics;
using System.Runtime.InteropServices;

namespace Magpie.Bench;

/// <summary>
/// How fast this machine is right now, printed beside a run so runs of different sittings can be read against each other.
/// Its speed drifts from day to day, and its parts do not drift together (docs/BENCHMARKS.md): one day a first-touch
/// page fault cost 14–18 µs, the next 2.6–2.8 µs while Lucene took three times the CPU per post with a register loop at
/// full speed. The pipelines take many more first-touch faults and touch more memory than the raw side, so the ratio to raw
/// moves with these too.
/// </summary>
internal static class MachineGauge
{
    /// <param name="LoopNsPerStep">One step of a dependent integer loop (no memory), on one core: plain CPU speed.</param>
    /// <param name="CacheNsPerRead">One read of a random place in 4 MB (each read depends on the last): what a core gets of the
    /// shared last-level cache, which neighbours on the host take from it (35–89 ns measured on a busy day, near memory's 114–184; 1 MB: 8 ns).</param>
    /// <param name="MemoryNsPerRead">The same over 64 MB: memory latency, what indexing (hash tables, postings, the GC's marking)
    /// waits on most.</param>
    /// <param name="CopyGBPerSecond">Copying 128 MB already touched: memory bandwidth.</param>
    /// <param name="FaultMicrosPerPage">The first write to a fresh 4 KB page of a new anonymous mapping.</param>
    public sealed record Reading(double LoopNsPerStep, double CacheNsPerRead, double MemoryNsPerRead, double CopyGBPerSecond, double FaultMicrosPerPage)
    {
        /// <summary>For a benchmark's JSON line.</summary>
        public object Json => new
        {
            loop_ns = Math.Round(LoopNsPerStep, 2), read_4mb_ns = Math.Round(CacheNsPerRead), read_64mb_ns = Math.Round(MemoryNsPerRead),
            copy_gb_s = Math.Round(CopyGBPerSecond, 1), fault_us = Math.Round(FaultMicrosPerPage, 1),
        };

        public override string ToString() =>
            $"machine: loop {LoopNsPerStep:F2} ns/step, random read in 4 MB {CacheNsPerRead:F0} ns, in 64 MB {MemoryNsPerRead:F0} ns, copy {CopyGBPerSecond:F1} GB/s, first-touch page fault {FaultMicrosPerPage:F1} µs";
    }

    /// <summary>The best of three of each (the least disturbed by whatever else runs), a few seconds in all.</summary>
    public static Reading Measure() => new(
        Enumerable.Range(0, 3).Min(_ => LoopNsPerStep()), RandomReadNs(4), RandomReadNs(64),
        Enumerable.Range(0, 3).Max(_ => CopyGBPerSecond()), Enumerable.Range(0, 3).Min(_ => FaultMicrosPerPage()));

    private static ulong Sink;

    private static double LoopNsPerStep()
    {
        const int steps = 50_000_000;
        var x = 88172645463325252UL;
        var watch = Stopwatch.StartNew();
        for (var i = 0; i < steps; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
        watch.Stop();
        Sink = x;   // read, so the JIT keeps the loop
        return watch.Elapsed.TotalNanoseconds / steps;
    }

    /// <summary>The best of three passes over one random cycle through <paramref name="megabytes"/>.</summary>
    private static double RandomReadNs(int megabytes)
    {
        // One cycle through all slots in a random order (Sattolo's shuffle), so no read can start before the one before it ends.
        var next = new int[megabytes << 18];
        for (var i = 0; i < next.Length; i++) next[i] = i;
        var random = new Random(42);
        for (var i = next.Length - 1; i > 0; i--)
        {
            var j = random.Next(i);
            (next[i], next[j]) = (next[j], next[i]);
        }
        const int reads = 5_000_000;
        var (at, best) = (0, double.MaxValue);
        for (var pass = 0; pass < 3; pass++)
        {
            var watch = Stopwatch.StartNew();
            for (var i = 0; i < reads; i++) at = next[at];
            best = Math.Min(best, watch.Elapsed.TotalNanoseconds / reads);
        }
        Sink = (ulong)at;
        return best;
    }

    private static double CopyGBPerSecond()
    {
        var (from, to) = (new byte[128 << 20], new byte[128 << 20]);
        from.AsSpan().Fill(1);
        to.AsSpan().Clear();
        var watch = Stopwatch.StartNew();
        for (var i = 0; i < 4; i++) from.AsSpan().CopyTo(to);
        return 4.0 * from.Length / watch.Elapsed.TotalSeconds / 1e9;
    }

    private static unsafe double FaultMicrosPerPage()
    {
        // 256 MB: far above malloc's mmap threshold, so a fresh private mapping (no huge pages: THP is madvise-only here).
        const int size = 256 << 20, page = 4096;
        var memory = (byte*)NativeMemory.Alloc(size);
        try
        {
            var watch = Stopwatch.StartNew();
            for (var offset = 0; offset < size; offset += page) memory[offset] = 1;
            return watch.Elapsed.TotalMicroseconds / (size / page);
        }
        finally { NativeMemory.Free(memory); }
    }
}
