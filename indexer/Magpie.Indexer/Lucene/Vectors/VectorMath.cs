using System.Numerics;
using System.Numerics.Tensors;
using Magpie.Contracts.Search;

namespace Magpie.Indexer.Lucene.Vectors;

/// <summary>
/// Similarities, SIMD through <see cref="TensorPrimitives"/> (float32) and <see cref="Vector{T}"/> widening (int8). Cosine and dot
/// product are the raw values; Euclidean is 1 / (1 + d²), as Elasticsearch scores <c>l2_norm</c>, so every similarity is higher
/// for closer vectors and a threshold means the same in every direction.
/// </summary>
internal static class VectorMath
{
    /// <summary>Scales the vector to unit length (a zero vector stays as it is).</summary>
    public static void ToUnitLength(Span<float> vector)
    {
        var norm = TensorPrimitives.Norm((ReadOnlySpan<float>)vector);
        if (norm > 0) TensorPrimitives.Divide(vector, norm, vector);
    }

    public static float Similarity(VectorSimilarity kind, ReadOnlySpan<float> a, float aNorm, ReadOnlySpan<float> q, float qNorm)
    {
        var dot = TensorPrimitives.Dot(a, q);
        return Of(kind, dot, aNorm, qNorm);
    }

    /// <summary>int8: the dot product of the bytes times both scales stands for the float one.</summary>
    public static float Similarity(VectorSimilarity kind, ReadOnlySpan<sbyte> a, float aScale, float aNorm, ReadOnlySpan<sbyte> q, float qScale, float qNorm) =>
        Of(kind, Dot(a, q) * aScale * qScale, aNorm, qNorm);

    private static float Of(VectorSimilarity kind, float dot, float aNorm, float qNorm) => kind switch
    {
        VectorSimilarity.Cosine => aNorm == 0 || qNorm == 0 ? 0 : dot / (aNorm * qNorm),
        VectorSimilarity.DotProduct => dot,
        _ => 1f / (1f + Math.Max(0, aNorm * aNorm + qNorm * qNorm - 2 * dot)),
    };

    /// <summary>Scales a vector into bytes (the largest magnitude to ±127); returns the factor back.</summary>
    public static float Quantize(ReadOnlySpan<float> values, Span<sbyte> into)
    {
        var max = TensorPrimitives.MaxMagnitude(values);
        var scale = max == 0 ? 1f : Math.Abs(max) / 127f;
        for (var i = 0; i < values.Length; i++) into[i] = (sbyte)Math.Clamp(MathF.Round(values[i] / scale), -127, 127);
        return scale;
    }

    /// <summary>
    /// A vector as bits, RavenDB's binary quantization: one bit per dimension, set when the value is at least 0, the first
    /// dimension in a byte's highest bit (so a vector given as bits compares bit for bit with RavenDB's).
    /// </summary>
    public static void Binarize(ReadOnlySpan<float> values, Span<byte> into)
    {
        into.Clear();
        for (var i = 0; i < values.Length; i++)
            if (values[i] >= 0) into[i >> 3] |= (byte)(0x80 >> (i & 7));
    }

    /// <summary>Binary vectors' similarity as RavenDB scores it: 1 − the bits that differ / every bit held (padding included).</summary>
    public static float BinarySimilarity(ReadOnlySpan<byte> a, ReadOnlySpan<byte> b) =>
        1f - TensorPrimitives.HammingBitDistance(a, b) / (8f * a.Length);

    /// <summary>The dot product of two byte vectors, widened to 32 bits so no product or sum overflows (4,096 × 127² fits easily).</summary>
    public static int Dot(ReadOnlySpan<sbyte> a, ReadOnlySpan<sbyte> b)
    {
        var sum = Vector<int>.Zero;
        var i = 0;
        var width = Vector<sbyte>.Count;
        for (; i <= a.Length - width; i += width)
        {
            Vector.Widen(new Vector<sbyte>(a[i..]), out var a0, out var a1);
            Vector.Widen(new Vector<sbyte>(b[i..]), out var b0, out var b1);
            var p0 = a0 * b0;
            var p1 = a1 * b1;
            Vector.Widen(p0, out var w0, out var w1);
            Vector.Widen(p1, out var w2, out var w3);
            sum += w0 + w1 + w2 + w3;
        }
        var total = Vector.Sum(sum);
        for (; i < a.Length; i++) total += a[i] * b[i];
        return total;
    }
}
