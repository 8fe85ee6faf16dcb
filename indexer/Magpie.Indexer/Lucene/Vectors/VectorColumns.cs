using Lucene.Net.Index;
using Magpie.Contracts.Search;

namespace Magpie.Indexer.Lucene.Vectors;

/// <summary>
/// A field's vectors in one segment, as a search reads them: packed one after another (float32, or int8 with a scale each), with each
/// vector's length and which document holds which. Vectors are written as binary doc values (<c>F@vec</c>) — per segment, so they
/// follow updates, deletes and merges as every other value does — and read into memory once per segment, kept under the facet
/// cache's budget (<c>FacetColumns.Other</c>): a segment's column bigger than a quarter of it is read for the query and
/// dropped, which is correct and slow; size <c>FacetCacheMegabytes</c> for the vectors searched (1M × 384 float32 ≈ 1.5 GB, int8 ≈ 0.4 GB).
/// </summary>
internal sealed class VectorColumn
{
    public required int Dimensions { get; init; }

    /// <summary>The segment's documents that hold a vector, ascending; <see cref="Floats"/>/<see cref="Bytes"/> hold theirs in this order.</summary>
    public required int[] Docs { get; init; }

    /// <summary>Each document's slot in <see cref="Docs"/> (-1: no vector), for walking a filter's matches rather than every vector.</summary>
    public required int[] Slots { get; init; }

    public float[]? Floats { get; init; }
    public sbyte[]? Bytes { get; init; }

    /// <summary>int8: the factor each vector's bytes are multiplied by to come back to its values.</summary>
    public float[]? Scales { get; init; }

    /// <summary>Each vector's length (from its float32 values).</summary>
    public required float[] Norms { get; init; }

    public long Size => 64 + 4L * Docs.Length + 4L * Slots.Length + 4L * (Floats?.Length ?? 0) + (Bytes?.Length ?? 0) + 4L * (Scales?.Length ?? 0) + 4L * Norms.Length;
}

/// <summary>Reads and keeps the vector columns of an index's segments (<see cref="VectorColumn"/>), and their graphs.</summary>
/// <remarks><paramref name="cached"/> keeps a segment's column under the index's column cache (its leaf, a key, how to read it).</remarks>
internal sealed class VectorColumns(Func<AtomicReader, string, Func<VectorColumn>, VectorColumn> cached, VectorGraphs? graphs = null)
{
    /// <summary>The segments' nearest-neighbour graphs (null: every search scans).</summary>
    public VectorGraphs? Graphs => graphs;

    /// <summary>The doc-values field a vector field is written to.</summary>
    public const string Suffix = "@vec";

    /// <summary>The field's vectors in the segment; null when the segment holds none.</summary>
    public VectorColumn? Of(AtomicReader leaf, string field, bool int8)
    {
        if (leaf.GetBinaryDocValues(field + Suffix) is null) return null;
        return cached(leaf, (int8 ? "vec8:" : "vec:") + field, () => Read(leaf, field, int8));
    }

    /// <summary>The field's vectors in the segment, read now (not through the cache).</summary>
    public static VectorColumn Read(AtomicReader leaf, string field, bool int8)
    {
        var values = leaf.GetBinaryDocValues(field + Suffix);
        var has = leaf.GetDocsWithField(field + Suffix);
        var docs = new List<int>();
        var dimensions = 0;
        var bytes = new global::Lucene.Net.Util.BytesRef();
        for (var doc = 0; doc < leaf.MaxDoc; doc++)
        {
            if (!has.Get(doc)) continue;
            values.Get(doc, bytes);
            if (bytes.Length == 0) continue;
            if (dimensions == 0) dimensions = bytes.Length / 4;
            if (bytes.Length == dimensions * 4) docs.Add(doc);   // the engine refuses other lengths on write (LuceneIndex)
        }
        var slots = new int[leaf.MaxDoc];
        Array.Fill(slots, -1);
        for (var i = 0; i < docs.Count; i++) slots[docs[i]] = i;
        var floats = new float[docs.Count * dimensions];
        var norms = new float[docs.Count];
        for (var i = 0; i < docs.Count; i++)
        {
            values.Get(docs[i], bytes);
            var target = floats.AsSpan(i * dimensions, dimensions);
            System.Runtime.InteropServices.MemoryMarshal.Cast<byte, float>(bytes.Bytes.AsSpan(bytes.Offset, bytes.Length)).CopyTo(target);
            norms[i] = System.Numerics.Tensors.TensorPrimitives.Norm((ReadOnlySpan<float>)target);
        }
        if (!int8) return new VectorColumn { Dimensions = dimensions, Docs = [.. docs], Slots = slots, Floats = floats, Norms = norms };
        var quantized = new sbyte[floats.Length];
        var scales = new float[docs.Count];
        for (var i = 0; i < docs.Count; i++) scales[i] = VectorMath.Quantize(floats.AsSpan(i * dimensions, dimensions), quantized.AsSpan(i * dimensions, dimensions));
        return new VectorColumn { Dimensions = dimensions, Docs = [.. docs], Slots = slots, Bytes = quantized, Scales = scales, Norms = norms };
    }
}
