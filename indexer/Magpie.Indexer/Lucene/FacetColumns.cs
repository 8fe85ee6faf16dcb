using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Indexer.Engine;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// The structures facets count with, built once per segment and kept while the segment lives (the seed's second design:
/// never one query per term). For a field: each document's value ordinals, read once from the segment's sorted-set doc
/// values (4.8's are random access, but an int array is what a per-document loop over a million matches wants), and for
/// numbers the value of each ordinal; for a range: the set of documents it matches. A query's facets are then one pass
/// over its matching documents reading these arrays.
/// <para/>
/// Keyed by the segment's core (doc values and postings never change within a core; deletes do, and the query's own
/// matches leave deleted documents out), so a refresh reuses the columns of every segment it kept; a segment merged away
/// drops its columns when Lucene disposes its core. Memory is bounded by a byte budget, least recently used out first;
/// a column bigger than a quarter of the budget is built for the query and not kept.
/// <para/>
/// Sorting reads the same string columns (<see cref="ColumnSort"/>), with every 64th term of the field (<see cref="TermSample"/>).
/// </summary>
internal sealed class FacetColumns(long budget)
{
    /// <summary>Ordinals per document: single-valued when <see cref="Start"/> is null (Ords[doc], -1 for none), else Ords[Start[doc]..Start[doc+1]].</summary>
    public sealed record Column(int[]? Start, int[] Ords, int ValueCount)
    {
        /// <summary>Number fields: the value of each ordinal (the long <see cref="LuceneDocuments.WriteSortableBytes"/> encoded); null for strings.</summary>
        public long[]? Numbers { get; init; }

        public long Bytes => 64L + 4L * Ords.Length + 4L * (Start?.Length ?? 0) + 8L * (Numbers?.Length ?? 0);
    }

    private readonly record struct Key(object Core, string What);

    private sealed record Entry(Key Key, object Value, long Bytes, LuceneIndex Owner);

    private readonly Dictionary<Key, LinkedListNode<Entry>> _cache = [];
    private readonly LinkedList<Entry> _recent = new();   // most recently used first
    private readonly HashSet<object> _watched = [];
    private long _bytes, _hits, _misses, _evictions;

    public Column Strings(LuceneIndex owner, AtomicReader leaf, string field) =>
        (Column)Get(owner, leaf, "s:" + field, () => Build(leaf, field, numbers: false), v => ((Column)v).Bytes);

    public Column Numbers(LuceneIndex owner, AtomicReader leaf, string field) =>
        (Column)Get(owner, leaf, "n:" + field, () => Build(leaf, field, numbers: true), v => ((Column)v).Bytes);

    /// <summary>
    /// Each ordinal's value of a string field in the segment, decoded once in one sequential pass. Folding a segment's facet counts
    /// looks each counted ordinal up by value; through <c>LookupOrd</c> that was a buffered disk read and a string per value per
    /// segment per query (a fifth of a match-all facet query's time over 25 segments, more as segments pile up after a load).
    /// </summary>
    public string[] Texts(LuceneIndex owner, AtomicReader leaf, string field) =>
        (string[])Get(owner, leaf, "v:" + field, () => TextsOf(ValuesOf(leaf, field)), v => TextBytes((string[])v));

    /// <summary>
    /// An id for each distinct value of a string field across an index's segments (the table lives as long as the index), and
    /// each segment ordinal's id: a facet over the field folds a segment's counts into an array by id instead of hashing each
    /// value's text into a map — per segment per query, that hashing was the largest cost after counting itself.
    /// </summary>
    public int[] ValueIds(LuceneIndex owner, AtomicReader leaf, string field, out ValueTable table)
    {
        ValueTable? t;
        lock (_tables)
            if (!_tables.TryGetValue((owner, field), out t)) _tables[(owner, field)] = t = new ValueTable();
        table = t;
        return (int[])Get(owner, leaf, "i:" + field, () => t.IdsOf(Texts(owner, leaf, field)), v => 16L + 4L * ((int[])v).Length);
    }

    private readonly Dictionary<(LuceneIndex, string), ValueTable> _tables = [];

    /// <summary>The values of one field of one index, each with an id (its position in <see cref="Text"/>).</summary>
    public sealed class ValueTable
    {
        private readonly Dictionary<string, int> _ids = new(StringComparer.Ordinal);
        private readonly List<string> _texts = [];

        public int Count { get { lock (_ids) return _texts.Count; } }

        public string Text(int id) { lock (_ids) return _texts[id]; }

        public int[] IdsOf(string[] texts)
        {
            lock (_ids)
                return [.. texts.Select(text =>
                {
                    if (_ids.TryGetValue(text, out var id)) return id;
                    _texts.Add(text);
                    return _ids[text] = _texts.Count - 1;
                })];
        }
    }

    /// <summary>Every <see cref="TermSample.Every"/>th term of a field's values in the segment, for finding a term's ordinal without a binary search on disk.</summary>
    public TermSample Terms(LuceneIndex owner, AtomicReader leaf, string field, SortedSetDocValues values) =>
        (TermSample)Get(owner, leaf, "t:" + field, () => TermSample.Of(values), v => ((TermSample)v).Bytes);

    /// <summary>The documents of the segment a query matches (deleted ones too: the counting query drops those).</summary>
    public FixedBitSet Matching(LuceneIndex owner, AtomicReaderContext leaf, Weight weight, string description) =>
        (FixedBitSet)Get(owner, leaf.AtomicReader, "q:" + description, () =>
        {
            var bits = new FixedBitSet(leaf.AtomicReader.MaxDoc);
            if (weight.GetScorer(leaf, null) is { } scorer) bits.Or(scorer);
            return bits;
        }, v => 64L + 8L * ((FixedBitSet)v).GetBits().Length);

    /// <summary>Any other per-segment structure kept under the same budget (a field's vectors: <c>Vectors/VectorColumns</c>), keyed by <paramref name="what"/>.</summary>
    public T Other<T>(LuceneIndex owner, AtomicReader leaf, string what, Func<T> build, Func<T, long> size) where T : class =>
        (T)Get(owner, leaf, "o:" + what, build, v => size((T)v));

    private object Get(LuceneIndex owner, AtomicReader leaf, string what, Func<object> build, Func<object, long> size)
    {
        if (leaf is not SegmentReader segment) return build();   // never the case for an IndexWriter's readers: nothing to key on
        var key = new Key(segment.CoreCacheKey, what);
        lock (_cache)
        {
            if (_cache.TryGetValue(key, out var hit))
            {
                _hits++;
                _recent.Remove(hit);
                _recent.AddFirst(hit);
                return hit.Value.Value;
            }
            _misses++;
        }
        // Built outside the lock: two queries may build the same column once each; the second is dropped below.
        var value = build();
        var bytes = size(value);
        if (bytes > budget / 4) return value;
        bool watch;
        lock (_cache)
        {
            if (_cache.TryGetValue(key, out var raced)) return raced.Value.Value;
            while (_bytes + bytes > budget && _recent.Last is { } eldest)
            {
                Remove(eldest);
                _evictions++;
            }
            _cache[key] = _recent.AddFirst(new Entry(key, value, bytes, owner));
            _bytes += bytes;
            watch = _watched.Add(key.Core);
        }
        // Outside our lock: Lucene calls the listener under its own, and the core can't close while the caller's searcher holds it.
        if (watch) segment.AddCoreDisposedListener(new CoreGone(this));
        return value;
    }

    private sealed class CoreGone(FacetColumns columns) : SegmentReader.ICoreDisposedListener
    {
        public void OnDispose(object core)
        {
            lock (columns._cache)
            {
                columns._watched.Remove(core);
                columns.Drop(e => e.Key.Core == core);
            }
        }
    }

    private void Remove(LinkedListNode<Entry> node)
    {
        _recent.Remove(node);
        _cache.Remove(node.Value.Key);
        _bytes -= node.Value.Bytes;
    }

    /// <summary>Lets go of the columns that match (their bytes no longer count against the budget). Call under the lock.</summary>
    private void Drop(Func<Entry, bool> which)
    {
        for (var node = _recent.First; node is not null;)
        {
            var next = node.Next;
            if (which(node.Value)) Remove(node);
            node = next;
        }
    }

    /// <summary>
    /// Builds, for a segment a merge just wrote, the columns the index's searches used on the segments it replaces, before the
    /// segment becomes searchable (Lucene's merged-segment warmer runs on the merge thread). Without it, the first search after
    /// a large merge read the new segment's doc values for every document — over a second for a million posts through
    /// NIOFSDirectory — while the searches behind it waited.
    /// </summary>
    public void Warm(LuceneIndex owner, AtomicReader merged)
    {
        string[] kinds;
        lock (_cache) kinds = [.. _recent.Where(e => e.Owner == owner && e.Key.What[0] is 's' or 'n' or 't' or 'v' or 'i').Select(e => e.Key.What).Distinct()];
        foreach (var what in kinds)
        {
            var field = what[2..];
            switch (what[0])
            {
                case 's': Strings(owner, merged, field); break;
                case 'n': Numbers(owner, merged, field); break;
                case 't' when ValuesOf(merged, field) is { } values: Terms(owner, merged, field, values); break;
                case 'v': Texts(owner, merged, field); break;
                case 'i': ValueIds(owner, merged, field, out _); break;
            }
        }
    }

    public void DropIndex(LuceneIndex owner)
    {
        lock (_cache) Drop(e => e.Owner == owner);
        lock (_tables)
            foreach (var key in _tables.Keys.Where(k => k.Item1 == owner).ToList()) _tables.Remove(key);
    }

    public FacetCacheStats Stats(LuceneIndex owner)
    {
        lock (_cache)
        {
            long mine = 0, mineEntries = 0;
            foreach (var e in _recent.Where(e => e.Owner == owner)) { mine += e.Bytes; mineEntries++; }
            return new FacetCacheStats(mine, mineEntries, _bytes, budget, _cache.Count, _hits, _misses, _evictions);
        }
    }

    /// <summary>A field's doc values in the segment as a set per document (a single-valued field, the document id, as a set of one); null if none.</summary>
    public static SortedSetDocValues? ValuesOf(AtomicReader leaf, string field) =>
        leaf.GetSortedSetDocValues(field) ?? (leaf.GetSortedDocValues(field) is { } one ? DocValues.Singleton(one) : null);

    /// <summary>One pass over the segment's documents: the ordinals of each (a field with no values gives an empty column).</summary>
    private static Column Build(AtomicReader leaf, string field, bool numbers)
    {
        var maxDoc = leaf.MaxDoc;
        var values = ValuesOf(leaf, field) ?? DocValues.EMPTY_SORTED_SET;
        var valueCount = (int)values.ValueCount;
        Column column;
        if (DocValues.UnwrapSingleton(values) is { } single)
        {
            var ords = new int[maxDoc];
            for (var doc = 0; doc < maxDoc; doc++) ords[doc] = single.GetOrd(doc);
            column = new Column(null, ords, valueCount);
        }
        else
        {
            var start = new int[maxDoc + 1];
            var ords = new List<int>(maxDoc);
            var multi = false;
            for (var doc = 0; doc < maxDoc; doc++)
            {
                start[doc] = ords.Count;
                values.SetDocument(doc);
                for (var ord = values.NextOrd(); ord != SortedSetDocValues.NO_MORE_ORDS; ord = values.NextOrd()) ords.Add((int)ord);
                multi |= ords.Count - start[doc] > 1;
            }
            start[maxDoc] = ords.Count;
            column = multi ? new Column(start, [.. ords], valueCount) : Singled(start, ords, maxDoc, valueCount);
        }
        if (!numbers) return column;
        var decoded = new long[valueCount];
        var scratch = new BytesRef();
        for (var ord = 0; ord < valueCount; ord++)
        {
            values.LookupOrd(ord, scratch);
            decoded[ord] = LuceneDocuments.FromSortableBytes(scratch);
        }
        return column with { Numbers = decoded };
    }

    private static string[] TextsOf(SortedSetDocValues? values)
    {
        if (values is null) return [];
        var texts = new string[values.ValueCount];
        var terms = values.GetTermsEnum();
        for (var ord = 0; ord < texts.Length && terms.MoveNext(); ord++) texts[ord] = terms.Term.Utf8ToString();
        return texts;
    }

    /// <summary>The array and its strings (object header, length, UTF-16 characters) as the runtime lays them out on 64 bits.</summary>
    private static long TextBytes(string[] texts)
    {
        long bytes = 64 + 8L * texts.Length;
        foreach (var t in texts) bytes += 22 + 2L * t.Length;
        return bytes;
    }

    /// <summary>A field with at most one value per document in this segment (and no values at all): one ordinal per document.</summary>
    private static Column Singled(int[] start, List<int> ords, int maxDoc, int valueCount)
    {
        var single = new int[maxDoc];
        for (var doc = 0; doc < maxDoc; doc++) single[doc] = start[doc + 1] > start[doc] ? ords[start[doc]] : -1;
        return new Column(null, single, valueCount);
    }

    /// <summary>Sampled terms of one field in one segment: term <c>i * Every</c> at <c>Samples[i]</c>.</summary>
    public sealed class TermSample(BytesRef[] samples, long bytes)
    {
        public const int Every = 64;

        public long Bytes { get; } = bytes;

        public static TermSample Of(SortedSetDocValues values)
        {
            var samples = new BytesRef[(values.ValueCount + Every - 1) / Every];
            long bytes = 64;
            for (var i = 0; i < samples.Length; i++)
            {
                samples[i] = new BytesRef();
                values.LookupOrd(i * (long)Every, samples[i]);
                bytes += 32 + samples[i].Length;
            }
            return new TermSample(samples, bytes);
        }

        /// <summary>
        /// <see cref="SortedDocValues.LookupTerm"/>: the term's ordinal, or <c>-(insertion point) - 1</c>; the samples narrow the search to
        /// one run of <see cref="Every"/> neighbouring terms (neighbours on disk too: one or two buffered reads, not twenty scattered ones).
        /// </summary>
        public long LookupTerm(BytesRef key, SortedSetDocValues values)
        {
            int lo = 0, hi = samples.Length - 1, block = -1;
            while (lo <= hi)
            {
                var mid = (lo + hi) >>> 1;
                var c = samples[mid].CompareTo(key);
                if (c == 0) return (long)mid * Every;
                if (c < 0) { block = mid; lo = mid + 1; }
                else hi = mid - 1;
            }
            if (block < 0) return -1;   // before the first term
            long low = (long)block * Every + 1, high = Math.Min(low + Every - 2, values.ValueCount - 1);
            var scratch = new BytesRef();
            while (low <= high)
            {
                var mid = (low + high) >>> 1;
                values.LookupOrd(mid, scratch);
                var c = scratch.CompareTo(key);
                if (c == 0) return mid;
                if (c < 0) low = mid + 1; else high = mid - 1;
            }
            return -(low + 1);
        }
    }
}
