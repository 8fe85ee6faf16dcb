using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;
using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// A sort on a string field in an order of its own: each value gets a sort key whose byte order is that order, and the sort
/// runs over the keys as <see cref="ColumnSort"/> runs over the values — so a hit's sort value, its cursor, and the merge of
/// shards' pages (all byte comparisons) need nothing new. Keys are unique (the value is part of each), so a cursor finds its
/// place exactly. <see cref="Alphanumeric"/> keys are kept with the segment; a <see cref="Random"/> order is built for the query.
/// </summary>
internal sealed class KeyedColumnSort : SortField
{
    private readonly string _what;
    private readonly Func<string, byte[]> _keyOf;
    private readonly bool _keep;
    private readonly FacetColumns _columns;
    private readonly LuceneIndex _owner;

    private KeyedColumnSort(string field, bool descending, string what, Func<string, byte[]> keyOf, bool keep, FacetColumns columns, LuceneIndex owner)
        : base(field, SortFieldType.CUSTOM, descending)
    {
        _what = what;
        _keyOf = keyOf;
        _keep = keep;
        _columns = columns;
        _owner = owner;
    }

    /// <summary>RavenDB's alphanumeric order (<see cref="AlphanumericKey"/>).</summary>
    public static KeyedColumnSort Alphanumeric(string field, bool descending, FacetColumns columns, LuceneIndex owner) =>
        new(field, descending, "alphanumeric", AlphanumericKey.Of, keep: true, columns, owner);

    /// <summary>The entries shuffled: a value's key is a hash of the seed and the value (the id), so one seed is one order everywhere.</summary>
    public static KeyedColumnSort Random(string field, bool descending, string seed, FacetColumns columns, LuceneIndex owner)
    {
        var seedHash = (long)XxHash64.HashToUInt64(Encoding.UTF8.GetBytes(seed));
        return new(field, descending, "random:" + seed, value =>
        {
            var bytes = Encoding.UTF8.GetBytes(value);
            var key = new byte[8 + bytes.Length];
            BinaryPrimitives.WriteUInt64BigEndian(key, XxHash64.HashToUInt64(bytes, seedHash));
            bytes.CopyTo(key, 8);
            return key;
        }, keep: false, columns, owner);
    }

    public override FieldComparer GetComparer(int numHits, int sortPos) => new Comparer(numHits, this);

    public override string ToString() => $"<{_what}: \"{Field}\">{(IsReverse ? "!" : "")}";

    public override bool Equals(object? obj) => obj is KeyedColumnSort other && other.Field == Field && other.IsReverse == IsReverse && other._what == _what;

    public override int GetHashCode() => HashCode.Combine(Field, IsReverse, _what);

    /// <summary>A segment's values in key order: the rank of each value ordinal, the ordinal at each rank, and the keys by rank.</summary>
    private sealed record Ranks(int[] RankOfOrd, byte[][] Keys)
    {
        public long Bytes => 64L + 4L * RankOfOrd.Length + Keys.Sum(k => 24L + k.Length);

        public static Ranks Of(string[] values, Func<string, byte[]> keyOf)
        {
            var keys = values.Select(keyOf).ToArray();
            var ords = Enumerable.Range(0, keys.Length).ToArray();
            Array.Sort(keys, ords, ByteOrder.Instance);
            var rankOfOrd = new int[ords.Length];
            for (var rank = 0; rank < ords.Length; rank++) rankOfOrd[ords[rank]] = rank;
            return new Ranks(rankOfOrd, keys);
        }
    }

    private sealed class ByteOrder : IComparer<byte[]>
    {
        public static readonly ByteOrder Instance = new();

        public int Compare(byte[]? x, byte[]? y) => x.AsSpan().SequenceCompareTo(y);
    }

    private Ranks RanksOf(AtomicReader leaf)
    {
        Ranks Build() => Ranks.Of(_columns.Texts(_owner, leaf, Field), _keyOf);
        return _keep ? _columns.Other(_owner, leaf, _what + ":" + Field, Build, r => r.Bytes) : Build();
    }

    private sealed class Comparer(int numHits, KeyedColumnSort sort) : FieldComparer.TermOrdValComparer(numHits, sort.Field)
    {
        protected override SortedDocValues GetSortedDocValues(AtomicReaderContext context, string field)
        {
            var leaf = context.AtomicReader;
            if (FacetColumns.ValuesOf(leaf, field) is null) return DocValues.EMPTY_SORTED;
            return new KeyValues(sort._columns.Strings(sort._owner, leaf, field), sort.RanksOf(leaf), sort.IsReverse);
        }
    }

    /// <summary>Each document's key rank (the largest of its values' ranks when descending, else the smallest; -1 for none).</summary>
    private sealed class KeyValues(FacetColumns.Column column, Ranks ranks, bool largest) : SortedKeyValues(ranks.Keys)
    {
        public override int GetOrd(int docID)
        {
            if (column.Start is not { } start) return column.Ords[docID] is var ord and >= 0 ? ranks.RankOfOrd[ord] : -1;
            int from = start[docID], to = start[docID + 1];
            if (from == to) return -1;
            var best = ranks.RankOfOrd[column.Ords[from]];
            for (var i = from + 1; i < to; i++)
            {
                var rank = ranks.RankOfOrd[column.Ords[i]];
                if (largest ? rank > best : rank < best) best = rank;
            }
            return best;
        }
    }
}
