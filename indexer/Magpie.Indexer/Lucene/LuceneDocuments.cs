using System.Buffers.Binary;
using Lucene.Net.Documents;
using Lucene.Net.Index;
using Lucene.Net.Util;
using Magpie.Indexer.Engine;
using EngineField = Magpie.Indexer.Engine.IndexField;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// Magpie's index entries as Lucene documents. Every entry gets <c>@id</c> (a term, stored, and sorted doc values: the
/// last sort key) and one <c>@exists</c> term per field present. Values:
/// <list type="bullet">
/// <item>text: analyzed, plus sorted-set doc values of its lower-cased start (order by a full-text field);</item>
/// <item>keyword: one term plus sorted-set doc values (sorting, facets);</item>
/// <item>long / double: trie-encoded terms (<see cref="Int64Field"/>, <see cref="DoubleField"/>, for <c>NumericRangeQuery</c>) plus
/// sorted-set doc values of their order-preserving 8 bytes (<see cref="SortableBytes"/>). 4.8 has no sorted-numeric doc values, and a
/// sorted set holds every value of a multi-valued field: sorting takes its smallest ascending and its largest descending, and
/// facets read the distinct values as ordinals.</item>
/// </list>
/// State entries (<see cref="StateEntry"/>) are written lean: their terms and stored values only (and <c>@id</c>).
/// </summary>
internal static class LuceneDocuments
{
    public const string Id = "@id", Exists = "@exists";

    /// <summary>Trie precision for numbers: 8 bits a level (4.8's default of 4 writes twice the terms; ranges stay a few thousand terms at most).</summary>
    public const int PrecisionStep = 8;

    public static readonly Term StateTerm = new(StateEntry.StateField, StateEntry.StateValue);

    private static readonly FieldType LongType = NumericType(global::Lucene.Net.Documents.NumericType.INT64);
    private static readonly FieldType DoubleType = NumericType(global::Lucene.Net.Documents.NumericType.DOUBLE);

    private static FieldType NumericType(NumericType type) => new FieldType
    {
        IsIndexed = true, IsTokenized = true, OmitNorms = true, IndexOptions = IndexOptions.DOCS_ONLY, NumericType = type, NumericPrecisionStep = PrecisionStep,
    }.Freeze();

    public static Document Build(string id, IndexEntry entry)
    {
        var doc = new Document
        {
            new StringField(Id, id, Field.Store.YES),
            // @id keeps its doc values on every entry, state entries too: a segment holding only state entries must still sort by it.
            new SortedDocValuesField(Id, new BytesRef(id)),
        };
        var state = StateEntry.IsStateId(id);
        HashSet<string>? present = state ? null : [];
        foreach (var field in entry.Fields)
        {
            if (state)
            {
                switch (field)
                {
                    case KeywordField k: doc.Add(new StringField(k.Name, k.Value, Field.Store.NO)); break;
                    case Engine.StoredField s: doc.Add(new global::Lucene.Net.Documents.StoredField(s.Name, s.Value)); break;
                }
                continue;
            }
            if (present!.Add(field.Name)) doc.Add(new StringField(Exists, field.Name, Field.Store.NO));
            Add(doc, field);
        }
        return doc;
    }

    private static void Add(Document doc, EngineField field)
    {
        var store = field.Stored ? Field.Store.YES : Field.Store.NO;
        switch (field)
        {
            case Engine.TextField t:
                doc.Add(new global::Lucene.Net.Documents.TextField(t.Name, t.Value, store));
                // Sortable by the lower-cased start: a doc-values term is capped at 32 KB.
                var sortable = t.Value.Length > 256 ? t.Value[..256] : t.Value;
                doc.Add(new SortedSetDocValuesField(t.Name, new BytesRef(sortable.ToLowerInvariant())));
                break;
            case KeywordField k:
                doc.Add(new StringField(k.Name, k.Value, store));
                doc.Add(new SortedSetDocValuesField(k.Name, new BytesRef(k.Value)));
                break;
            case LongField l:
                doc.Add(new Int64Field(l.Name, l.Value, LongType));
                doc.Add(new SortedSetDocValuesField(l.Name, SortableBytes(l.Value)));
                if (l.Stored) doc.Add(new global::Lucene.Net.Documents.StoredField(l.Name, l.Value));
                break;
            case Engine.DoubleField d:
                doc.Add(new global::Lucene.Net.Documents.DoubleField(d.Name, d.Value, DoubleType));
                doc.Add(new SortedSetDocValuesField(d.Name, SortableBytes(NumericUtils.DoubleToSortableInt64(d.Value))));
                if (d.Stored) doc.Add(new global::Lucene.Net.Documents.StoredField(d.Name, d.Value));
                break;
            case Engine.StoredField s:
                doc.Add(new global::Lucene.Net.Documents.StoredField(s.Name, s.Value));
                break;
            default: throw new ArgumentException($"unknown field kind {field.GetType().Name}");
        }
    }

    /// <summary>A long as 8 big-endian bytes with the sign bit flipped: byte order is numeric order (doubles go through their sortable long first).</summary>
    public static BytesRef SortableBytes(long value)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64BigEndian(bytes, value ^ long.MinValue);
        return new BytesRef(bytes);
    }

    /// <summary>The long <see cref="SortableBytes"/> wrote.</summary>
    public static long FromSortableBytes(BytesRef bytes) =>
        BinaryPrimitives.ReadInt64BigEndian(bytes.Bytes.AsSpan(bytes.Offset, 8)) ^ long.MinValue;
}
