using System.Buffers.Binary;

namespace Magpie.Contracts.Search;

/// <summary>
/// Where a hit sits in the sort order: the next page starts after it (Lucene's searchAfter). It holds the
/// hit's sort values as the engine gave them, the document id always last, so it means the same in every
/// shard: shards searched with one cursor continue from the same place, and hits from several shards merge
/// by comparing cursors (<see cref="Compare"/>).
/// </summary>
public sealed record SearchCursor(byte[] Values)
{
    public override string ToString() => Convert.ToBase64String(Values).TrimEnd('=').Replace('+', '-').Replace('/', '_');

    /// <summary>Reads a cursor a client sent back; null if it is not one of ours.</summary>
    public static SearchCursor? Parse(string text)
    {
        var base64 = text.Replace('-', '+').Replace('_', '/');
        base64 += new string('=', (4 - base64.Length % 4) % 4);
        var bytes = new byte[base64.Length];
        if (!Convert.TryFromBase64String(base64, bytes, out var n)) return null;
        var cursor = new SearchCursor(bytes[..n]);
        try { cursor.Decode(); return cursor; }
        catch (Exception e) when (e is ArgumentOutOfRangeException or InvalidDataException) { return null; }
    }

    /// <summary>
    /// Sort order of two hits of the same query: each sort value in turn (descending where <paramref name="descending"/>
    /// says so; a missing value sorts lowest, as Lucene's default), then the document id ascending.
    /// </summary>
    public static int Compare(SearchCursor a, SearchCursor b, IReadOnlyList<bool> descending)
    {
        var x = a.Decode();
        var y = b.Decode();
        for (var i = 0; i < Math.Min(x.Length, y.Length); i++)
        {
            var c = CompareValues(x[i], y[i]);
            if (c != 0) return i < descending.Count && descending[i] ? -c : c;
        }
        return x.Length.CompareTo(y.Length);
    }

    private static int CompareValues(object? a, object? b) => (a, b) switch
    {
        (null, null) => 0,
        (null, _) => -1,
        (_, null) => 1,
        (byte[] p, byte[] q) => p.AsSpan().SequenceCompareTo(q),
        (long p, long q) => p.CompareTo(q),
        (double p, double q) => p.CompareTo(q),
        (float p, float q) => p.CompareTo(q),
        // Shards that disagreed on a field's sort type (numbers vs terms): numbers first, consistently.
        _ => Rank(a).CompareTo(Rank(b)),
    };

    private static int Rank(object v) => v switch { long or double or float => 0, _ => 1 };

    private object?[]? _decoded;

    /// <summary>
    /// A cursor of sort values: null (no value), byte[] (a term; numbers sort as their order-preserving bytes), long, double,
    /// float (a score). Big-endian: a count, then per value a tag and the value (cursors of earlier versions read the same).
    /// </summary>
    public static SearchCursor Of(IReadOnlyList<object?> values)
    {
        var size = 4;
        foreach (var v in values) size += 1 + v switch { byte[] b => 4 + b.Length, long or double => 8, float => 4, _ => 0 };
        var bytes = new byte[size];
        var span = bytes.AsSpan();
        BinaryPrimitives.WriteInt32BigEndian(span, values.Count);
        var at = 4;
        foreach (var v in values)
        {
            switch (v)
            {
                case null: span[at++] = 0; break;
                case byte[] b: span[at++] = 1; BinaryPrimitives.WriteInt32BigEndian(span[at..], b.Length); b.CopyTo(span[(at + 4)..]); at += 4 + b.Length; break;
                case long l: span[at++] = 2; BinaryPrimitives.WriteInt64BigEndian(span[at..], l); at += 8; break;
                case double d: span[at++] = 3; BinaryPrimitives.WriteDoubleBigEndian(span[at..], d); at += 8; break;
                case float f: span[at++] = 4; BinaryPrimitives.WriteSingleBigEndian(span[at..], f); at += 4; break;
                default: throw new ArgumentException($"a sort value can't be a {v.GetType().Name}");
            }
        }
        return new SearchCursor(bytes);
    }

    /// <summary>The sort values, in the order of <see cref="Of"/>.</summary>
    public IReadOnlyList<object?> SortValues => Decode();

    private object?[] Decode()
    {
        if (_decoded is not null) return _decoded;
        ReadOnlySpan<byte> span = Values;
        var at = 0;
        var n = BinaryPrimitives.ReadInt32BigEndian(span);
        at += 4;
        if (n is < 0 or > 64) throw new InvalidDataException("not a cursor");
        var values = new object?[n];
        for (var i = 0; i < n; i++)
        {
            switch (span[at++])
            {
                case 0: values[i] = null; break;
                case 1: var length = BinaryPrimitives.ReadInt32BigEndian(span[at..]); at += 4; values[i] = span.Slice(at, length).ToArray(); at += length; break;
                case 2: values[i] = BinaryPrimitives.ReadInt64BigEndian(span[at..]); at += 8; break;
                case 3: values[i] = BinaryPrimitives.ReadDoubleBigEndian(span[at..]); at += 8; break;
                case 4: values[i] = BinaryPrimitives.ReadSingleBigEndian(span[at..]); at += 4; break;
                default: throw new InvalidDataException("not a cursor");
            }
        }
        if (at != span.Length) throw new InvalidDataException("not a cursor");
        return _decoded = values;
    }
}
