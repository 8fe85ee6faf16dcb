using Magpie.Contracts.Indexes;
using System.Buffers.Binary;
using System.Text;
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
/// sorted-set doc values of their order-preserving 8 bytes (<see cref="WriteSortableBytes"/>). 4.8 has no sorted-numeric doc values, and a
/// sorted set holds every value of a multi-valued field: sorting takes its smallest ascending and its largest descending, and
/// facets read the distinct values as ordinals.</item>
/// </list>
/// State entries (<see cref="StateEntry"/>) are written lean: their terms and stored values only (and <c>@id</c>).
/// </summary>
internal static class LuceneDocuments
{
    public const string Id = EntryFields.Id, Exists = "@exists";

    /// <summary>Trie precision for numbers: 8 bits a level (4.8's default of 4 writes twice the terms; ranges stay a few thousand terms at most).</summary>
    public const int PrecisionStep = 8;

    public static readonly Term StateTerm = new(StateEntry.StateField, StateEntry.StateValue);

    private static readonly FieldType LongType = NumericType(global::Lucene.Net.Documents.NumericType.INT64);
    private static readonly FieldType DoubleType = NumericType(global::Lucene.Net.Documents.NumericType.DOUBLE);

    private static FieldType NumericType(NumericType type) => new FieldType
    {
        IsIndexed = true, IsTokenized = true, OmitNorms = true, IndexOptions = IndexOptions.DOCS_ONLY, NumericType = type, NumericPrecisionStep = PrecisionStep,
    }.Freeze();

    /// <summary>
    /// This thread's fields, reused from document to document: a new Field for every value makes Lucene.Net create a token
    /// stream and its attributes for each (through a lock-guarded factory: 28% of the raw writer's time in a profile);
    /// a reused one keeps its stream. Safe because the writer has consumed a document before the next is built.
    /// </summary>
    [ThreadStatic] private static FieldPool? _pool;

    /// <summary>Starts a document (or the entries of one update): fields taken from the pool before stay in use until the next call.</summary>
    public static FieldPool Fields()
    {
        var pool = _pool ??= new FieldPool();
        pool.Reset();
        return pool;
    }

    public static Document Build(FieldPool pool, string id, IndexEntry entry)
    {
        var doc = new Document
        {
            pool.String(Id, id, Field.Store.YES),
            // @id keeps its doc values on every entry, state entries too: a segment holding only state entries must still sort by it.
            pool.Sorted(Id, id),
        };
        var state = StateEntry.IsStateId(id);
        pool.Present.Clear();
        foreach (var field in entry.Fields)
        {
            if (state)
            {
                switch (field)
                {
                    case KeywordField k: doc.Add(pool.String(k.Name, k.Value, Field.Store.NO)); break;
                    case Engine.StoredField s: doc.Add(pool.Stored(s.Name, s.Value)); break;
                }
                continue;
            }
            if (pool.Present.Add(field.Name)) doc.Add(pool.String(Exists, field.Name, Field.Store.NO));
            Add(pool, doc, field);
        }
        return doc;
    }

    private static void Add(FieldPool pool, Document doc, EngineField field)
    {
        var store = field.Stored ? Field.Store.YES : Field.Store.NO;
        switch (field)
        {
            case Engine.TextField t:
                doc.Add(pool.Text(t.Name, t.Value, store));
                // Sortable by the lower-cased start: a doc-values term is capped at 32 KB.
                var sortable = t.Value.AsSpan(0, Math.Min(t.Value.Length, 256));
                doc.Add(pool.SortedSetLower(t.Name, sortable));
                break;
            case KeywordField k:
                doc.Add(pool.String(k.Name, k.Value, store));
                doc.Add(pool.SortedSet(k.Name, k.Value));
                break;
            case LongField l:
                doc.Add(pool.Long(l.Name, l.Value));
                doc.Add(pool.SortedSet(l.Name, l.Value));
                if (l.Stored) doc.Add(new global::Lucene.Net.Documents.StoredField(l.Name, l.Value));
                break;
            case Engine.DoubleField d:
                // -0 is 0 (as JSON, JavaScript and SQL compare them): Lucene's sortable form would keep them apart.
                var number = d.Value == 0 ? 0d : d.Value;
                doc.Add(pool.Double(d.Name, number));
                doc.Add(pool.SortedSet(d.Name, NumericUtils.DoubleToSortableInt64(number)));
                if (d.Stored) doc.Add(new global::Lucene.Net.Documents.StoredField(d.Name, d.Value));
                break;
            case Engine.StoredField s:
                doc.Add(pool.Stored(s.Name, s.Value));
                break;
            case StoredJsonField j:
                doc.Add(pool.Stored(j.Name, j.Utf8));
                break;
            case VectorField v:
                doc.Add(new BinaryDocValuesField(v.Name + Vectors.VectorColumns.Suffix, new BytesRef(System.Runtime.InteropServices.MemoryMarshal.AsBytes(v.Values.AsSpan()).ToArray())));
                // Per segment, as the vectors are (a column of one or two distinct values costs next to nothing).
                if (v.Embedder is { } embedder) doc.Add(new SortedDocValuesField(v.Name + Vectors.VectorColumns.EmbedderSuffix, new BytesRef(embedder)));
                if (v.ScanOnly) doc.Add(new NumericDocValuesField(v.Name + Vectors.VectorColumns.ScanOnlySuffix, 1));
                break;
            case EmbeddingField e: throw new InvalidOperationException($"the field '{e.Name}' reached the engine before its text was embedded");
            default: throw new ArgumentException($"unknown field kind {field.GetType().Name}");
        }
    }

    /// <summary>One thread's reusable fields, by kind and name; the n-th use of a (kind, name) in a document takes its n-th field.</summary>
    internal sealed class FieldPool
    {
        private readonly Dictionary<(int Kind, string Name), Slot> _slots = [];
        private readonly List<Slot> _touched = [];

        /// <summary>The field names the entry being built has so far (its <c>@exists</c> terms).</summary>
        public HashSet<string> Present { get; } = [];

        public void Reset()
        {
            foreach (var slot in _touched) slot.Used = 0;
            _touched.Clear();
        }

        /// <summary>The fields of one (kind, name), and how many the current document uses.</summary>
        private sealed class Slot
        {
            private readonly List<Field> _fields = [];
            public int Used;

            /// <summary>The next field to reuse, or null when this document needs one more than were ever made: then <see cref="Keep"/>.</summary>
            public Field? Next() => Used < _fields.Count ? _fields[Used++] : null;

            public Field Keep(Field field)
            {
                _fields.Add(field);
                Used++;
                return field;
            }
        }

        private Slot SlotOf(int kind, string name)
        {
            if (!_slots.TryGetValue((kind, name), out var slot)) _slots[(kind, name)] = slot = new Slot();
            if (slot.Used == 0) _touched.Add(slot);
            return slot;
        }

        public Field String(string name, string value, Field.Store store)
        {
            var slot = SlotOf(store == Field.Store.YES ? 1 : 2, name);
            var f = slot.Next() ?? slot.Keep(new StringField(name, value, store));
            f.SetStringValue(value);
            return f;
        }

        public Field Text(string name, string value, Field.Store store)
        {
            var slot = SlotOf(store == Field.Store.YES ? 3 : 4, name);
            var f = slot.Next() ?? slot.Keep(new global::Lucene.Net.Documents.TextField(name, value, store));
            f.SetStringValue(value);
            return f;
        }

        /// <summary>The value as UTF-8 in the field's own buffer, reused from document to document (the writer copies it when it
        /// takes the document): a new BytesRef per value was a tenth of the write path's byte arrays in an allocation profile.</summary>
        public Field Sorted(string name, string value)
        {
            var slot = SlotOf(5, name);
            var f = slot.Next() ?? slot.Keep(new SortedDocValuesField(name, new BytesRef()));
            f.GetBinaryValue().CopyChars(value);
            return f;
        }

        private Field SortedSet(string name)
        {
            var slot = SlotOf(6, name);
            return slot.Next() ?? slot.Keep(new SortedSetDocValuesField(name, new BytesRef()));
        }

        /// <inheritdoc cref="Sorted(string, string)"/>
        public Field SortedSet(string name, string value)
        {
            var f = SortedSet(name);
            f.GetBinaryValue().CopyChars(value);
            return f;
        }

        /// <summary>
        /// Text lower-cased (<c>ToLowerInvariant</c>), as UTF-8 in the field's own buffer. ASCII, nearly all text, is lower-cased
        /// straight into it, one pass, with no lower-cased string made on the way (and without the per-character lookup
        /// invariant globalization does); other text goes through <c>ToLowerInvariant</c>.
        /// </summary>
        public Field SortedSetLower(string name, ReadOnlySpan<char> text)
        {
            var f = SortedSet(name);
            var bytes = f.GetBinaryValue();
            if (bytes.Bytes.Length < text.Length) bytes.Bytes = new byte[ArrayUtil.Oversize(text.Length, 1)];
            if (Ascii.ToLower(text, bytes.Bytes.AsSpan(0, text.Length), out var written) == System.Buffers.OperationStatus.Done)
            {
                bytes.Offset = 0;
                bytes.Length = written;
            }
            else bytes.CopyChars(text.ToString().ToLowerInvariant());
            return f;
        }

        /// <summary>A long as <see cref="WriteSortableBytes"/> encodes it, in the field's own buffer.</summary>
        public Field SortedSet(string name, long value)
        {
            var f = SortedSet(name);
            var bytes = f.GetBinaryValue();
            if (bytes.Bytes.Length < 8) bytes.Bytes = new byte[8];
            WriteSortableBytes(bytes.Bytes, value);
            bytes.Offset = 0;
            bytes.Length = 8;
            return f;
        }

        public Field Long(string name, long value)
        {
            var slot = SlotOf(7, name);
            var f = slot.Next() ?? slot.Keep(new Int64Field(name, value, LongType));
            f.SetInt64Value(value);
            return f;
        }

        public Field Double(string name, double value)
        {
            var slot = SlotOf(8, name);
            var f = slot.Next() ?? slot.Keep(new global::Lucene.Net.Documents.DoubleField(name, value, DoubleType));
            f.SetDoubleValue(value);
            return f;
        }

        public Field Stored(string name, string value)
        {
            var slot = SlotOf(9, name);
            var f = slot.Next() ?? slot.Keep(new global::Lucene.Net.Documents.StoredField(name, value));
            f.SetStringValue(value);
            return f;
        }

        /// <summary>The bytes as they are (no copy: the writer copies them when it takes the document).</summary>
        public Field Stored(string name, ReadOnlyMemory<byte> value)
        {
            var bytes = System.Runtime.InteropServices.MemoryMarshal.TryGetArray(value, out var segment)
                ? new BytesRef(segment.Array, segment.Offset, segment.Count)
                : new BytesRef(value.ToArray());
            var slot = SlotOf(10, name);
            var f = slot.Next() ?? slot.Keep(new global::Lucene.Net.Documents.StoredField(name, bytes));
            f.SetBytesValue(bytes);
            return f;
        }
    }

    /// <summary>A long as 8 big-endian bytes with the sign bit flipped: byte order is numeric order (doubles go through their sortable long first).</summary>
    public static void WriteSortableBytes(Span<byte> into, long value) => BinaryPrimitives.WriteInt64BigEndian(into, value ^ long.MinValue);

    /// <summary>The long <see cref="WriteSortableBytes"/> wrote.</summary>
    public static long FromSortableBytes(BytesRef bytes) =>
        BinaryPrimitives.ReadInt64BigEndian(bytes.Bytes.AsSpan(bytes.Offset, 8)) ^ long.MinValue;
}
