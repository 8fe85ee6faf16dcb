using Lucene.Net.Index;
using Lucene.Net.Util;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// Sorted doc values over sort keys built for a query or a segment (<see cref="KeyedColumnSort"/>, a number field's exact ties in
/// <see cref="ColumnSort"/>): the ordinal is the key's place in <paramref name="keys"/> (sorted, distinct), its value the key's
/// bytes; the subclass says each document's ordinal.
/// </summary>
internal abstract class SortedKeyValues(byte[][] keys) : SortedDocValues
{
    public override void LookupOrd(int ord, BytesRef result)
    {
        result.Bytes = keys[ord];
        result.Offset = 0;
        result.Length = keys[ord].Length;
    }

    public override int ValueCount => keys.Length;

    public override int LookupTerm(BytesRef key)
    {
        int lo = 0, hi = keys.Length - 1;
        var wanted = key.Bytes.AsSpan(key.Offset, key.Length);
        while (lo <= hi)
        {
            var mid = (lo + hi) >>> 1;
            var c = keys[mid].AsSpan().SequenceCompareTo(wanted);
            if (c < 0) lo = mid + 1;
            else if (c > 0) hi = mid - 1;
            else return mid;
        }
        return -(lo + 1);
    }
}
