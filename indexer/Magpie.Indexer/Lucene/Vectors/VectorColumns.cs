using Lucene.Net.Index;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;

namespace Magpie.Indexer.Lucene.Vectors;

/// <summary>
/// A field's vectors in one segment, as a search reads them: packed one after another (float32, int8 with a scale each, or bits), with each
/// vector's length and which document holds which. Vectors are written as binary doc values (<c>F@vec</c>) — per segment, so they
/// follow updates, deletes and merges as every other value does — and read into memory once per segment, kept under the facet
/// cache's budget (<c>FacetColumns.Other</c>): a segment's column bigger than a quarter of it is read for the query and
/// dropped, which is correct and slow; size <c>FacetCacheMegabytes</c> for the vectors searched (1M × 384 float32 ≈ 1.5 GB, int8 ≈ 0.4 GB, binary ≈ 48 MB).
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

    /// <summary>Binary: each vector's signs, <see cref="BitsPerVector"/> bytes each (<see cref="VectorMath.Binarize"/>).</summary>
    public byte[]? Bits { get; init; }

    public int BitsPerVector => (Dimensions + 7) / 8;

    /// <summary>Each vector's length (from its float32 values).</summary>
    public required float[] Norms { get; init; }

    public long Size => 64 + 4L * Docs.Length + 4L * Slots.Length + 4L * (Floats?.Length ?? 0) + (Bytes?.Length ?? 0) + 4L * (Scales?.Length ?? 0) + (Bits?.Length ?? 0) + 4L * Norms.Length;
}

/// <summary>Reads and keeps the vector columns of an index's segments (<see cref="VectorColumn"/>), and their graphs.</summary>
/// <remarks><paramref name="cached"/> keeps a segment's column under the index's column cache (its leaf, a key, how to read it).</remarks>
internal sealed class VectorColumns(Func<AtomicReader, string, Func<VectorColumn>, VectorColumn> cached, VectorGraphs? graphs = null)
{
    /// <summary>The segments' nearest-neighbour graphs (null: every search scans).</summary>
    public VectorGraphs? Graphs => graphs;

    /// <summary>The doc-values field a vector field is written to.</summary>
    public const string Suffix = "@vec";

    /// <summary>Beside a vector made of a text: who made it (<see cref="Engine.VectorField.Embedder"/>).</summary>
    public const string EmbedderSuffix = "@by";

    /// <summary>Beside a vector of a field searched by scanning only (binary): no graph is built for it.</summary>
    public const string ScanOnlySuffix = "@scan";

    /// <summary>The field's vectors in the segment, held as <paramref name="quantization"/> asks; null when the segment holds none.</summary>
    public VectorColumn? Of(AtomicReader leaf, string field, VectorQuantization quantization)
    {
        if (leaf.GetBinaryDocValues(field + Suffix) is null) return null;
        var key = quantization switch { VectorQuantization.Int8 => "vec8:", VectorQuantization.Binary => "vec1:", _ => "vec:" } + field;
        return cached(leaf, key, () => Read(leaf, field, quantization));
    }

    /// <summary>
    /// Who made the segment's vectors of the field, when a map embedded them of a text: a query embedding its text with another
    /// embedder is refused (<see cref="IndexEngineException"/>) rather than compared across two models' spaces.
    /// </summary>
    public static void CheckEmbedder(AtomicReader leaf, string field, string queried)
    {
        if (leaf.GetSortedDocValues(field + EmbedderSuffix) is not { } made) return;
        var value = new global::Lucene.Net.Util.BytesRef();
        for (var ord = 0; ord < made.ValueCount; ord++)
        {
            made.LookupOrd(ord, value);
            var by = value.Utf8ToString();
            if (by != queried)
                throw new IndexEngineException($"the field '{field}' holds vectors made by {by}; the query's text was embedded by {queried}, whose " +
                    "vectors are not comparable with them: name the same embedder in the query (embedding.text(Field, ai.task('name')) for a connection)");
        }
    }

    /// <summary>Whether the segment's vectors of the field are searched by scanning only (no graph wanted).</summary>
    public static bool ScanOnly(AtomicReader leaf, string field) => leaf.FieldInfos.FieldInfo(field + ScanOnlySuffix) is not null;

    /// <summary>The field's vectors in the segment, read now (not through the cache).</summary>
    public static VectorColumn Read(AtomicReader leaf, string field, VectorQuantization quantization)
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
        if (quantization == VectorQuantization.None) return new VectorColumn { Dimensions = dimensions, Docs = [.. docs], Slots = slots, Floats = floats, Norms = norms };
        if (quantization == VectorQuantization.Binary)
        {
            var per = (dimensions + 7) / 8;
            var bits = new byte[docs.Count * per];
            for (var i = 0; i < docs.Count; i++) VectorMath.Binarize(floats.AsSpan(i * dimensions, dimensions), bits.AsSpan(i * per, per));
            return new VectorColumn { Dimensions = dimensions, Docs = [.. docs], Slots = slots, Bits = bits, Norms = norms };
        }
        var quantized = new sbyte[floats.Length];
        var scales = new float[docs.Count];
        for (var i = 0; i < docs.Count; i++) scales[i] = VectorMath.Quantize(floats.AsSpan(i * dimensions, dimensions), quantized.AsSpan(i * dimensions, dimensions));
        return new VectorColumn { Dimensions = dimensions, Docs = [.. docs], Slots = slots, Bytes = quantized, Scales = scales, Norms = norms };
    }
}
