package magpie.lucene;

import java.io.IOException;
import java.util.*;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.util.FixedBitSet;

/**
 * The structures facets count with, built once per segment and kept while the segment lives (the seed's
 * second design: never one query per term). For a field: each document's value ordinals (segment ordinals of
 * a string field's doc values, or of the distinct numbers of a numeric field); for a range: the set of
 * documents it matches. A query's facets are then one pass over the query's matching documents that reads
 * these arrays.
 *
 * Keyed by the segment's core (doc values and postings never change within a core; deletes do, and the
 * query's own matching set already leaves deleted documents out), so a refresh reuses the columns of
 * every segment it kept and builds only those of new segments; a segment merged away drops its columns
 * when Lucene closes its core. Memory is bounded by a byte budget, least recently used first out; a column
 * bigger than a quarter of the budget is built for the query and not kept.
 */
final class FacetColumns {
    /** Ordinals per document: single-valued when start is null (ords[doc], -1 for none), else ords[start[doc]..start[doc+1]). */
    static final class Column {
        final int[] start, ords;
        /** Numeric fields: the distinct values (sortable longs), ordinals index into it; null for a string field. */
        final long[] numbers;
        final int valueCount;
        Column(int[] start, int[] ords, long[] numbers, int valueCount) { this.start = start; this.ords = ords; this.numbers = numbers; this.valueCount = valueCount; }
        long bytes() { return 64L + 4L * ords.length + (start == null ? 0 : 4L * start.length) + (numbers == null ? 0 : 8L * numbers.length); }
    }

    record Key(IndexReader.CacheKey core, String what) { }
    record Entry(Object value, long bytes, int index) { }

    final long budget;
    private final LinkedHashMap<Key, Entry> cache = new LinkedHashMap<>(64, 0.75f, true);
    private final Set<IndexReader.CacheKey> watched = new HashSet<>();
    private long bytes, hits, misses, evictions;

    FacetColumns(long budget) { this.budget = budget; }

    /** The ordinals of a SortedSet doc-values field (strings). */
    Column strings(int index, LeafReader leaf, String field) throws IOException {
        return (Column) get(index, leaf, "s:" + field, () -> buildStrings(leaf, field), v -> ((Column) v).bytes());
    }

    /** The ordinals of a SortedNumeric doc-values field, over its distinct values (numbers, as sortable longs). */
    Column numbers(int index, LeafReader leaf, String field) throws IOException {
        return (Column) get(index, leaf, "n:" + field, () -> buildNumbers(leaf, field), v -> ((Column) v).bytes());
    }

    /** The documents of the segment a query matches (deleted ones too: the counting query drops those). */
    FixedBitSet matching(int index, LeafReaderContext leaf, Weight weight, String description) throws IOException {
        return (FixedBitSet) get(index, leaf.reader(), "q:" + description, () -> {
            var bits = new FixedBitSet(leaf.reader().maxDoc());
            var scorer = weight.scorer(leaf);
            if (scorer != null) bits.or(scorer.iterator());
            return bits;
        }, v -> 64L + ((FixedBitSet) v).ramBytesUsed());
    }

    interface Build { Object run() throws IOException; }
    interface Size { long of(Object value); }

    private Object get(int index, LeafReader leaf, String what, Build build, Size size) throws IOException {
        var helper = leaf.getCoreCacheHelper();
        if (helper == null) return build.run();   // not a segment (never the case for an IndexWriter's readers): nothing to key on
        var key = new Key(helper.getKey(), what);
        synchronized (this) {
            var hit = cache.get(key);
            if (hit != null) { hits++; return hit.value; }
            misses++;
        }
        // Built outside the lock: two queries may build the same column once each; the second one is dropped below.
        var value = build.run();
        var n = size.of(value);
        if (n > budget / 4) return value;
        synchronized (this) {
            if (cache.containsKey(key)) return cache.get(key).value;
            while (bytes + n > budget && !cache.isEmpty()) {
                var eldest = cache.entrySet().iterator();
                bytes -= eldest.next().getValue().bytes;
                eldest.remove();
                evictions++;
            }
            cache.put(key, new Entry(value, n, index));
            bytes += n;
            if (watched.add(key.core)) helper.addClosedListener(this::dropCore);
        }
        return value;
    }

    private synchronized void dropCore(IndexReader.CacheKey core) {
        watched.remove(core);
        drop(e -> e.getKey().core == core);
    }

    /** Lets go of the columns that match (their bytes no longer count against the budget). */
    private synchronized void drop(java.util.function.Predicate<Map.Entry<Key, Entry>> which) {
        cache.entrySet().removeIf(e -> {
            if (!which.test(e)) return false;
            bytes -= e.getValue().bytes;
            return true;
        });
    }

    /** Cache figures: this index's bytes and entries, then the host's bytes, budget, entries, hits, misses, evictions. */
    synchronized long[] stats(int index) {
        long mine = 0, mineEntries = 0;
        for (var e : cache.values()) if (e.index == index) { mine += e.bytes; mineEntries++; }
        return new long[] { mine, mineEntries, bytes, budget, cache.size(), hits, misses, evictions };
    }

    synchronized void dropIndex(int index) {
        drop(e -> e.getValue().index == index);
    }

    static Column buildStrings(LeafReader leaf, String field) throws IOException {
        var maxDoc = leaf.maxDoc();
        var dv = DocValues.getSortedSet(leaf, field);
        var single = new int[maxDoc];
        Arrays.fill(single, -1);
        int[] start = null;
        var multi = new IntList();
        for (var doc = dv.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = dv.nextDoc()) {
            var first = (int) dv.nextOrd();
            var second = dv.nextOrd();
            if (second == SortedSetDocValues.NO_MORE_ORDS && start == null) { single[doc] = first; continue; }
            if (start == null) start = toMulti(single, doc, multi);
            start[doc] = multi.size;
            multi.add(first);
            for (var o = second; o != SortedSetDocValues.NO_MORE_ORDS; o = dv.nextOrd()) multi.add((int) o);
            start[doc + 1] = multi.size;
        }
        if (start == null) return new Column(null, single, null, (int) dv.getValueCount());
        fillGaps(start);
        return new Column(start, multi.toArray(), null, (int) dv.getValueCount());
    }

    static Column buildNumbers(LeafReader leaf, String field) throws IOException {
        var maxDoc = leaf.maxDoc();
        var dv = DocValues.getSortedNumeric(leaf, field);
        var docs = new IntList();
        var values = new LongList();
        var starts = new IntList();
        var multiValued = false;
        for (var doc = dv.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = dv.nextDoc()) {
            docs.add(doc);
            starts.add(values.size);
            var n = dv.docValueCount();
            long last = 0;
            for (var i = 0; i < n; i++) {
                var v = dv.nextValue();   // sorted within a document: a repeated value counts once
                if (i > 0 && v == last) continue;
                values.add(v);
                last = v;
            }
            multiValued |= values.size - starts.get(starts.size - 1) > 1;
        }
        starts.add(values.size);
        var distinct = values.toArray();
        Arrays.sort(distinct);
        var unique = 0;
        for (var i = 0; i < distinct.length; i++) if (i == 0 || distinct[i] != distinct[unique - 1]) distinct[unique++] = distinct[i];
        var numbers = Arrays.copyOf(distinct, unique);
        if (!multiValued) {
            var ords = new int[maxDoc];
            Arrays.fill(ords, -1);
            for (var i = 0; i < docs.size; i++) ords[docs.get(i)] = Arrays.binarySearch(numbers, values.get(starts.get(i)));
            return new Column(null, ords, numbers, unique);
        }
        var start = new int[maxDoc + 1];
        var ords = new int[values.size];
        var d = 0;
        for (var doc = 0; doc < maxDoc; doc++) {
            start[doc] = d < docs.size ? starts.get(d) : values.size;
            if (d < docs.size && docs.get(d) == doc) d++;
        }
        start[maxDoc] = values.size;
        for (var i = 0; i < values.size; i++) ords[i] = Arrays.binarySearch(numbers, values.get(i));
        return new Column(start, ords, numbers, unique);
    }

    /** The column turns multi-valued at doc: the single values so far move over, and start gets one slot per document. */
    private static int[] toMulti(int[] single, int upTo, IntList multi) {
        var start = new int[single.length + 1];
        Arrays.fill(start, -1);
        for (var doc = 0; doc < upTo; doc++) {
            start[doc] = multi.size;
            if (single[doc] >= 0) multi.add(single[doc]);
            start[doc + 1] = multi.size;
        }
        return start;
    }

    /** Documents with no value got no start: each takes the end of the one before (an empty range). */
    private static void fillGaps(int[] start) {
        var last = 0;
        for (var i = 0; i < start.length; i++) {
            if (start[i] < 0) start[i] = last;
            else last = start[i];
        }
    }

    static final class IntList {
        int[] a = new int[16];
        int size;
        void add(int v) { if (size == a.length) a = Arrays.copyOf(a, size * 2); a[size++] = v; }
        int get(int i) { return a[i]; }
        int[] toArray() { return Arrays.copyOf(a, size); }
    }

    static final class LongList {
        long[] a = new long[16];
        int size;
        void add(long v) { if (size == a.length) a = Arrays.copyOf(a, size * 2); a[size++] = v; }
        long get(int i) { return a[i]; }
        long[] toArray() { return Arrays.copyOf(a, size); }
    }
}
