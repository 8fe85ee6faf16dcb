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
/// </summary>
internal sealed class ColumnSort(string field, bool descending, FacetColumns columns, LuceneIndex owner)
    : SortField(field, SortFieldType.CUSTOM, descending)
{
    public override FieldComparer GetComparer(int numHits, int sortPos) => new Comparer(numHits, Field, IsReverse, columns, owner);

    public override string ToString() => $"<column: \"{Field}\">{(IsReverse ? "!" : "")}";

    public override bool Equals(object? obj) => obj is ColumnSort other && other.Field == Field && other.IsReverse == IsReverse;

    public override int GetHashCode() => HashCode.Combine(Field, IsReverse);

    private sealed class Comparer(int numHits, string field, bool descending, FacetColumns columns, LuceneIndex owner)
        : FieldComparer.TermOrdValComparer(numHits, field)
    {
        protected override SortedDocValues GetSortedDocValues(AtomicReaderContext context, string field)
        {
            var leaf = context.AtomicReader;
            if (FacetColumns.ValuesOf(leaf, field) is not { } terms) return DocValues.EMPTY_SORTED;
            return new ColumnValues(columns.Strings(owner, leaf, field), descending, terms, () => columns.Terms(owner, leaf, field, terms));
        }
    }

    /// <summary>One ordinal per document from the column (the largest of a document's values when descending, else the smallest; -1 for none).</summary>
    private sealed class ColumnValues(FacetColumns.Column column, bool largest, SortedSetDocValues terms, Func<FacetColumns.TermSample> sample)
        : SortedDocValues
    {
        public override int GetOrd(int docID)
        {
            if (column.Start is not { } start) return column.Ords[docID];
            int from = start[docID], to = start[docID + 1];
            return from == to ? -1 : column.Ords[largest ? to - 1 : from];
        }

        public override void LookupOrd(int ord, BytesRef result) => terms.LookupOrd(ord, result);

        public override int ValueCount => column.ValueCount;

        /// <summary>A few times per segment (the queue's bottom from another segment, a cursor): through the sampled terms, built on first use.</summary>
        public override int LookupTerm(BytesRef key) => (int)(_sample ??= sample()).LookupTerm(key, terms);

        private FacetColumns.TermSample? _sample;
    }
}
