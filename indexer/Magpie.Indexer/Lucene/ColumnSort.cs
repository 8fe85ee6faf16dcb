using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// A sort on a field's values (strings, and numbers as their order-preserving bytes) by their smallest ordinal ascending and
/// largest descending — what 4.8's <c>SortedSetSortField</c> does — but reading each hit's ordinal from the in-memory
/// column of <see cref="FacetColumns"/> instead of the doc values. Lucene45 doc values are read from disk per document
/// (<c>DirectPackedReader</c>, built for memory-mapped files); through <c>NIOFSDirectory</c> every read is a buffered
/// file read under a lock: 58 % of a 16-client term query's time over a million posts went there. Terms (cursor values,
/// the queue's bottom) are still looked up in the doc values: a few per segment, not one per hit.
/// <para/>
/// A number field's sort (<paramref name="exact"/>: its <c>F@long</c>) breaks the ties of integers past 2^53 that share a double by
/// their exact values, in segments that hold any (<see cref="ExactValues"/>).
/// </summary>
internal sealed class ColumnSort(string field, bool descending, FacetColumns columns, LuceneIndex owner, string? exact = null)
    : SortField(field, SortFieldType.CUSTOM, descending)
{
    public override FieldComparer GetComparer(int numHits, int sortPos) => new Comparer(numHits, Field, IsReverse, columns, owner, exact);

    public override string ToString() => $"<column: \"{Field}\">{(IsReverse ? "!" : "")}";

    public override bool Equals(object? obj) => obj is ColumnSort other && other.Field == Field && other.IsReverse == IsReverse;

    public override int GetHashCode() => HashCode.Combine(Field, IsReverse);

    private sealed class Comparer(int numHits, string field, bool descending, FacetColumns columns, LuceneIndex owner, string? exact)
        : FieldComparer.TermOrdValComparer(numHits, field)
    {
        protected override SortedDocValues GetSortedDocValues(AtomicReaderContext context, string field)
        {
            var leaf = context.AtomicReader;
            if (FacetColumns.ValuesOf(leaf, field) is not { } terms) return DocValues.EMPTY_SORTED;
            if (exact is not null && FacetColumns.ValuesOf(leaf, exact) is { } exactTerms)
                return columns.Other(owner, leaf, $"exact:{field}:{descending}", () => ExactValues.Of(columns.Strings(owner, leaf, field), terms,
                    columns.Strings(owner, leaf, exact), exactTerms, leaf.MaxDoc, descending), v => v.Bytes);
            return new ColumnValues(columns.Strings(owner, leaf, field), descending, terms, () => columns.Terms(owner, leaf, field, terms));
        }
    }

    /// <summary>One ordinal per document from the column (the largest of a document's values when descending, else the smallest; -1 for none).</summary>
    private sealed class ColumnValues(FacetColumns.Column column, bool largest, SortedSetDocValues terms, Func<FacetColumns.TermSample> sample)
        : SortedDocValues
    {
        public override int GetOrd(int docID) => Pick(column, docID, largest);

        /// <summary>A document's ordinal in a column: its largest value's when <paramref name="largest"/>, else its smallest's; -1 for none.</summary>
        public static int Pick(FacetColumns.Column column, int doc, bool largest)
        {
            if (column.Start is not { } start) return column.Ords[doc];
            int from = start[doc], to = start[doc + 1];
            return from == to ? -1 : column.Ords[largest ? to - 1 : from];
        }

        public override void LookupOrd(int ord, BytesRef result) => terms.LookupOrd(ord, result);

        public override int ValueCount => column.ValueCount;

        /// <summary>A few times per segment (the queue's bottom from another segment, a cursor): through the sampled terms, built on first use.</summary>
        public override int LookupTerm(BytesRef key) => (int)(_sample ??= sample()).LookupTerm(key, terms);

        private FacetColumns.TermSample? _sample;
    }

    /// <summary>
    /// A segment's documents ranked by (double, exact integer): one ordinal per distinct pair, whose value is the double's 8 bytes
    /// followed by the integer's 8 when the document has one — so across segments, one without integers past 2^53 (plain
    /// <see cref="ColumnValues"/>, 8 bytes) compares with this one by bytes as the values compare.
    /// </summary>
    private sealed class ExactValues(int[] ords, byte[][] values) : SortedKeyValues(values)
    {
        public long Bytes { get; } = 64L + 4L * ords.Length + values.Sum(v => 24L + v.Length);

        public static ExactValues Of(FacetColumns.Column numbers, SortedSetDocValues numberTerms, FacetColumns.Column integers,
            SortedSetDocValues integerTerms, int maxDoc, bool largest)
        {
            var pairs = new long[maxDoc];
            for (var doc = 0; doc < maxDoc; doc++)
                pairs[doc] = ((long)(ColumnValues.Pick(numbers, doc, largest) + 1) << 32) | (uint)(ColumnValues.Pick(integers, doc, largest) + 1);
            var distinct = pairs.Distinct().Order().ToArray();
            var ords = new int[maxDoc];
            for (var doc = 0; doc < maxDoc; doc++) ords[doc] = (int)(pairs[doc] >> 32) == 0 ? -1 : Array.BinarySearch(distinct, pairs[doc]);
            // Ordinals count from the first pair with a number: documents without one (-1) sort as missing.
            var first = distinct.Length > 0 && (int)(distinct[0] >> 32) == 0 ? 1 : 0;
            for (var doc = 0; doc < maxDoc; doc++) if (ords[doc] >= 0) ords[doc] -= first;
            var values = distinct.Skip(first).Select(pair =>
            {
                var number = new BytesRef();
                numberTerms.LookupOrd((int)(pair >> 32) - 1, number);
                var integer = (int)(pair & uint.MaxValue) - 1;
                var value = new byte[integer < 0 ? 8 : 16];
                number.Bytes.AsSpan(number.Offset, 8).CopyTo(value);
                if (integer >= 0)
                {
                    var bytes = new BytesRef();
                    integerTerms.LookupOrd(integer, bytes);
                    bytes.Bytes.AsSpan(bytes.Offset, 8).CopyTo(value.AsSpan(8));
                }
                return value;
            }).ToArray();
            return new ExactValues(ords, values);
        }

        public override int GetOrd(int docID) => ords[docID];
    }
}
