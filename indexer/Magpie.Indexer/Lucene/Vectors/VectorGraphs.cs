using System.Collections.Concurrent;
using Cloud.Unum.USearch;
using Lucene.Net.Index;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Lucene.Vectors;

/// <summary>
/// Approximate nearest-neighbour graphs (HNSW, by USearch) of an index's vector columns, one per segment and field, for cosine
/// searches. A segment never changes once written, so its graph, built once, stays right for its life: deletes are filtered
/// out at search time, and a merge makes a new segment whose graph is built anew. Graphs are built in the background on one
/// thread for the whole process, at a lower CPU priority (as merges are), for segments of at least <c>minimum</c> vectors
/// (smaller ones are scanned, which costs no more); until its graph is ready a segment is scanned exactly, so answers never
/// wait for a build. Each graph is saved beside the index (<c>graphs/</c>, written to a temporary file and renamed, so a kill -9
/// mid-build leaves no half graph) and mapped back on the next start; a file is named after its segment, field and a
/// fingerprint of the segment's vectors, so a graph is only ever used with the vectors it was built from (after a crash Lucene
/// may give a name again to a new segment).
/// </summary>
internal sealed class VectorGraphs
{
    /// <summary>The graph's parameters: 16 links per node, 128 candidates while adding, 128 while searching (recall vs. speed, bench `vectors`).</summary>
    private const int Connectivity = 16, ExpansionAdd = 128, ExpansionSearch = 128;

    private readonly string? _folder;
    private readonly int _minimum;
    private readonly ILogger _log;
    private readonly ConcurrentDictionary<string, SegmentGraph?> _graphs = new(StringComparer.Ordinal);
    private long _nextSweep;

    /// <summary>Each column's graph name (its fingerprint hashes vectors): made once per column, not on every search.</summary>
    private readonly System.Runtime.CompilerServices.ConditionalWeakTable<VectorColumn, string> _names = new();

    /// <param name="folder">Where graphs are saved; null: kept in memory only.</param>
    /// <param name="minimum">Vectors a segment holds before a graph is built for it (0: never).</param>
    public VectorGraphs(string? folder, int minimum, ILogger log)
    {
        _folder = folder;
        _minimum = minimum;
        _log = log;
        if (folder is null || minimum <= 0) return;
        Directory.CreateDirectory(folder);
        foreach (var partial in Directory.GetFiles(folder, "*.tmp")) File.Delete(partial);
    }

    /// <summary>The segment's graph of the field, or null (too few vectors, not built yet: then its build is queued).</summary>
    public SegmentGraph? For(AtomicReader leaf, string field, VectorColumn column)
    {
        if (_minimum <= 0 || column.Docs.Length < _minimum || leaf is not SegmentReader segment) return null;
        var name = _names.GetValue(column, c => Name(segment.SegmentName, field, c));
        if (_graphs.TryGetValue(name, out var graph)) return graph;
        var path = _folder is null ? null : Path.Combine(_folder, name + ".usearch");
        if (Saved(name, path) is { } saved) return saved;
        if (_graphs.TryAdd(name, null)) GraphBuilds.Queue(() => Build(name, path, column));
        return null;
    }

    /// <summary>The graph saved before (after a restart), mapped; null when there is none or it can't be read (then deleted).</summary>
    private SegmentGraph? Saved(string name, string? path)
    {
        if (path is null || !File.Exists(path)) return null;
        try { return _graphs[name] = new SegmentGraph(new USearchIndex(path, view: true)); }
        catch (Exception e) when (e is USearchException or IOException)
        {
            _log.LogWarning("the vector graph {Graph} could not be read ({Reason}); building it again", name, e.Message);
            File.Delete(path);
            return null;
        }
    }

    /// <summary>Segments (and fields) whose graph a commit queued already: each is read once.</summary>
    private readonly ConcurrentDictionary<(string Segment, string Field), bool> _prepared = new();

    /// <summary>
    /// After a commit: queues the graph of each segment's vector field the commit holds, so searches find it built rather than
    /// scanning until one asks. The column is read (outside the column cache) when its turn on the build thread comes, so queued
    /// segments hold no memory; a graph a search queued first, or already built, is not built twice (both go by its name).
    /// </summary>
    public void Prepare(IndexReader reader)
    {
        if (_minimum <= 0) return;
        foreach (var leaf in reader.Leaves.Select(l => l.AtomicReader).OfType<SegmentReader>())
        {
            if (leaf.MaxDoc < _minimum) continue;
            foreach (var info in leaf.FieldInfos)
            {
                if (!info.Name.EndsWith(VectorColumns.Suffix, StringComparison.Ordinal)) continue;
                var field = info.Name[..^VectorColumns.Suffix.Length];
                if (VectorColumns.ScanOnly(leaf, field) || !_prepared.TryAdd((leaf.SegmentName, field), true)) continue;
                // Held open until its turn: a segment merged away meanwhile is still read whole (and its graph swept later).
                if (!leaf.TryIncRef()) continue;
                Interlocked.Increment(ref _queued);
                GraphBuilds.Queue(() =>
                {
                    try { BuildPrepared(leaf, field); }
                    finally { Interlocked.Decrement(ref _queued); }
                });
            }
        }
    }

    /// <summary>Prepared segments not read yet (their graph counts as pending).</summary>
    private long _queued;

    /// <summary>A prepared segment's turn: its column read (then let go), its graph built unless it exists already.</summary>
    private void BuildPrepared(SegmentReader leaf, string field)
    {
        VectorColumn column;
        try { column = VectorColumns.Read(leaf, field, Contracts.Indexes.VectorQuantization.None); }
        catch (Exception e)
        {
            _log.LogWarning("reading segment {Segment}'s vectors of {Field} for its graph failed ({Reason}); a search builds it", leaf.SegmentName, field, e.Message);
            return;
        }
        finally { leaf.DecRef(); }
        if (column.Docs.Length < _minimum) return;
        var name = _names.GetValue(column, c => Name(leaf.SegmentName, field, c));
        if (_graphs.ContainsKey(name)) return;
        var path = _folder is null ? null : Path.Combine(_folder, name + ".usearch");
        if (Saved(name, path) is null && _graphs.TryAdd(name, null)) Build(name, path, column);
    }

    /// <summary>Graphs built (and their vectors), and those waiting to be built.</summary>
    public Engine.VectorGraphStats Stats()
    {
        var graphs = _graphs.Values.ToList();
        return new(graphs.Count(g => g is not null), graphs.Count(g => g is null) + (int)Interlocked.Read(ref _queued), graphs.Sum(g => g?.Count ?? 0));
    }

    /// <summary>Forgets the graphs of segments no longer in the index (at most once a minute) and deletes their files.</summary>
    public void Sweep(IndexReader reader)
    {
        var now = Environment.TickCount64;
        if (_folder is null || now < Interlocked.Read(ref _nextSweep)) return;
        Interlocked.Exchange(ref _nextSweep, now + 60_000);
        var live = reader.Leaves.Select(l => l.AtomicReader).OfType<SegmentReader>().Select(s => s.SegmentName + ".").ToList();
        bool Live(string name) => live.Any(s => name.StartsWith(s, StringComparison.Ordinal));
        // A graph is never disposed here: a search may still hold it; USearch's finalizer frees it once nothing does.
        foreach (var name in _graphs.Keys.Where(n => !Live(n))) _graphs.TryRemove(name, out _);
        foreach (var key in _prepared.Keys.Where(k => !Live(k.Segment + "."))) _prepared.TryRemove(key, out _);
        foreach (var file in Directory.GetFiles(_folder, "*.usearch"))
            if (!Live(Path.GetFileName(file)))
                try { File.Delete(file); } catch (IOException) { }
    }

    private void Build(string name, string? path, VectorColumn column)
    {
        try
        {
            var clock = System.Diagnostics.Stopwatch.StartNew();
            var dims = column.Dimensions;
            var graph = new USearchIndex(MetricKind.Cos, ScalarKind.Int8, (ulong)dims, Connectivity, ExpansionAdd, ExpansionSearch, false);
            var vector = new float[dims];
            for (var slot = 0; slot < column.Docs.Length; slot++)
            {
                Unit(column, slot, vector);
                graph.Add((ulong)slot, vector);
            }
            if (path is not null)
            {
                var temporary = path + ".tmp";
                graph.Save(temporary);
                using (var written = new FileStream(temporary, FileMode.Open, FileAccess.ReadWrite)) written.Flush(flushToDisk: true);
                File.Move(temporary, path, overwrite: true);
                graph.Dispose();
                graph = new USearchIndex(path, view: true);
            }
            _graphs[name] = new SegmentGraph(graph);
            _log.LogInformation("vector graph {Graph} built: {Vectors:N0} vectors in {Seconds:F1} s", name, column.Docs.Length, clock.Elapsed.TotalSeconds);
        }
        catch (Exception e)
        {
            // The segment stays scanned exactly; the next search asks again.
            _graphs.TryRemove(name, out _);
            _log.LogWarning(e, "building the vector graph {Graph} failed", name);
        }
    }

    /// <summary>The slot's vector at unit length (the graph quantizes to int8 over [-1, 1]; cosine does not see the length).</summary>
    public static void Unit(VectorColumn column, int slot, Span<float> into)
    {
        var dims = column.Dimensions;
        if (column.Floats is { } floats) floats.AsSpan(slot * dims, dims).CopyTo(into);
        else
            for (var i = 0; i < dims; i++) into[i] = column.Bytes![slot * dims + i] * column.Scales![slot];
        VectorMath.ToUnitLength(into);
    }

    /// <summary>
    /// segment.field-hash.fingerprint: the fingerprint hashes the count, the dimensions, which documents hold vectors and every
    /// vector's norm (from its float32 values), so a float32 and an int8 column of one segment share their graph (candidates are
    /// scored exactly from the column searched), and a segment name Lucene reuses after a crash never finds another's graph.
    /// </summary>
    private static string Name(string segment, string field, VectorColumn column)
    {
        var hash = new System.IO.Hashing.XxHash64();
        hash.Append(System.Text.Encoding.UTF8.GetBytes(field));
        var fieldHash = hash.GetCurrentHashAsUInt64();
        Span<int> shape = [column.Docs.Length, column.Dimensions];
        hash.Append(System.Runtime.InteropServices.MemoryMarshal.AsBytes(shape));
        hash.Append(System.Runtime.InteropServices.MemoryMarshal.AsBytes(column.Docs.AsSpan()));
        hash.Append(System.Runtime.InteropServices.MemoryMarshal.AsBytes(column.Norms.AsSpan()));
        return $"{segment}.{fieldHash:x16}.{hash.GetCurrentHashAsUInt64():x16}";
    }
}

/// <summary>
/// One segment's graph. USearch answers as many searches at once as it has thread contexts (the machine's cores) and fails the
/// rest rather than queueing them, so searches of one graph take turns; searches of different segments' graphs run side by side.
/// </summary>
internal sealed class SegmentGraph(USearchIndex index)
{
    public long Count { get; } = (long)index.Size();

    private readonly System.Threading.Lock _turn = new();

    /// <summary>The graph's nearest <paramref name="count"/> slots to a unit-length query (fewer when the graph holds fewer).</summary>
    public int Search(float[] unitQuery, int count, out ulong[] slots)
    {
        lock (_turn) return index.Search(unitQuery, count, out slots, out _);
    }
}

/// <summary>The process's one thread building vector graphs, niced as merge threads are: indexing and queries go first.</summary>
internal static class GraphBuilds
{
    private static readonly BlockingCollection<Action> Pending = [];

    static GraphBuilds()
    {
        new Thread(() =>
        {
            if (OperatingSystem.IsLinux()) BackgroundMergeScheduler.LowerThisThread();
            foreach (var build in Pending.GetConsumingEnumerable()) build();
        }) { IsBackground = true, Name = "Vector graph builds" }.Start();
    }

    public static void Queue(Action build) => Pending.Add(build);
}
