package magpie.lucene;

import java.io.*;
import java.util.*;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.util.FixedBitSet;
import org.apache.lucene.util.NumericUtils;

/**
 * Counts a query's facets in one pass over its matching documents (the FACETS op): per document, each term
 * facet adds to the counters of the document's value ordinals and each range facet to the ranges whose
 * document sets hold it; aggregations (sum/min/max/count of numeric fields) go along. Per segment the
 * counters are arrays indexed by segment ordinal; a segment's non-zero counters are folded into one map by
 * value when the pass moves on. Every value is returned (no top N here): shards and owners are merged
 * exactly by the caller, which then orders and cuts.
 */
final class FacetCounter extends SimpleCollector {
    static final byte TERMS = 0, RANGES = 1, HISTOGRAM = 2;

    /** A term facet counts the values of its sources (a string field, its numbers field); a range facet the documents each range matches. */
    static final class Spec {
        byte kind;
        String[] stringFields = new String[0], numberFields = new String[0];
        Query[] ranges = new Query[0];
        Weight[] rangeWeights;
        String[] aggregateFields = new String[0];
        /** HISTOGRAM: a long field (dates as .NET ticks) counted in buckets of interval, keyed by the bucket's start, divided by unit. */
        long interval, origin, unit = 1;
    }

    /** Count of documents, then per aggregated field: how many values, their sum, min and max. */
    static final class Acc {
        long count;
        final long[] n;
        final double[] sum, min, max;
        Acc(int fields) {
            n = new long[fields]; sum = new double[fields]; min = new double[fields]; max = new double[fields];
            Arrays.fill(min, Double.POSITIVE_INFINITY); Arrays.fill(max, Double.NEGATIVE_INFINITY);
        }
    }

    private final FacetColumns columns;
    private final int index;
    private final Spec[] specs;
    /** Per facet: value (String or Double) → totals; range facets: one Acc per range. */
    private final List<Map<Object, Acc>> byValue = new ArrayList<>();
    private final List<Acc[]> byRange = new ArrayList<>();
    long total;

    // The current segment's columns and counters.
    private LeafReaderContext leaf;
    private FacetColumns.Column[][] sources;            // [facet][source]
    private FixedBitSet[][] rangeBits;                  // [facet][range]
    private FacetColumns.Column[][] aggregates;         // [facet][field]
    private long[][][] counts;                          // [facet][source][ord]
    private double[][][][] sums, mins, maxs;            // [facet][source][field][ord]
    private long[][][][] ns;
    private double[][] docValues;                       // scratch: this document's values per aggregated field (sum, min, max)
    private long[] docN;

    FacetCounter(FacetColumns columns, int index, Spec[] specs) {
        this.columns = columns;
        this.index = index;
        this.specs = specs;
        for (var s : specs) {
            byValue.add(new HashMap<>());
            var r = new Acc[s.ranges.length];
            for (var i = 0; i < r.length; i++) r[i] = new Acc(s.aggregateFields.length);
            byRange.add(r);
        }
    }

    @Override public ScoreMode scoreMode() { return ScoreMode.COMPLETE_NO_SCORES; }

    @Override
    protected void doSetNextReader(LeafReaderContext context) throws IOException {
        fold();
        leaf = context;
        var reader = context.reader();
        var f = specs.length;
        sources = new FacetColumns.Column[f][];
        rangeBits = new FixedBitSet[f][];
        aggregates = new FacetColumns.Column[f][];
        counts = new long[f][][];
        sums = new double[f][][][]; mins = new double[f][][][]; maxs = new double[f][][][]; ns = new long[f][][][];
        for (var i = 0; i < f; i++) {
            var s = specs[i];
            aggregates[i] = new FacetColumns.Column[s.aggregateFields.length];
            for (var a = 0; a < aggregates[i].length; a++) aggregates[i][a] = columns.numbers(index, reader, s.aggregateFields[a]);
            if (s.kind == RANGES) {
                rangeBits[i] = new FixedBitSet[s.ranges.length];
                for (var r = 0; r < s.ranges.length; r++) rangeBits[i][r] = columns.matching(index, context, s.rangeWeights[r], s.ranges[r].toString());
                continue;
            }
            var n = s.stringFields.length + s.numberFields.length;
            sources[i] = new FacetColumns.Column[n];
            for (var j = 0; j < s.stringFields.length; j++) sources[i][j] = columns.strings(index, reader, s.stringFields[j]);
            for (var j = 0; j < s.numberFields.length; j++) sources[i][s.stringFields.length + j] = columns.numbers(index, reader, s.numberFields[j]);
            counts[i] = new long[n][];
            var fields = s.aggregateFields.length;
            sums[i] = new double[n][fields][]; mins[i] = new double[n][fields][]; maxs[i] = new double[n][fields][]; ns[i] = new long[n][fields][];
            for (var j = 0; j < n; j++) {
                var values = sources[i][j].valueCount;
                counts[i][j] = new long[values];
                for (var a = 0; a < fields; a++) {
                    sums[i][j][a] = new double[values];
                    mins[i][j][a] = new double[values]; Arrays.fill(mins[i][j][a], Double.POSITIVE_INFINITY);
                    maxs[i][j][a] = new double[values]; Arrays.fill(maxs[i][j][a], Double.NEGATIVE_INFINITY);
                    ns[i][j][a] = new long[values];
                }
            }
        }
        var most = 0;
        for (var s : specs) most = Math.max(most, s.aggregateFields.length);
        docValues = new double[3][most];
        docN = new long[most];
    }

    @Override
    public void collect(int doc) {
        total++;
        for (var i = 0; i < specs.length; i++) {
            var fields = aggregates[i].length;
            for (var a = 0; a < fields; a++) aggregate(aggregates[i][a], doc, a);
            if (specs[i].kind == RANGES) {
                var bits = rangeBits[i];
                var accs = byRange.get(i);
                for (var r = 0; r < bits.length; r++) {
                    if (!bits[r].get(doc)) continue;
                    var acc = accs[r];
                    acc.count++;
                    for (var a = 0; a < fields; a++) {
                        if (docN[a] == 0) continue;
                        acc.n[a] += docN[a]; acc.sum[a] += docValues[0][a];
                        acc.min[a] = Math.min(acc.min[a], docValues[1][a]); acc.max[a] = Math.max(acc.max[a], docValues[2][a]);
                    }
                }
                continue;
            }
            var src = sources[i];
            for (var j = 0; j < src.length; j++) {
                var c = src[j];
                if (c.start == null) {
                    var ord = c.ords[doc];
                    if (ord >= 0) add(i, j, ord, fields);
                } else {
                    for (var k = c.start[doc]; k < c.start[doc + 1]; k++) add(i, j, c.ords[k], fields);
                }
            }
        }
    }

    private void add(int facet, int source, int ord, int fields) {
        counts[facet][source][ord]++;
        for (var a = 0; a < fields; a++) {
            if (docN[a] == 0) continue;
            ns[facet][source][a][ord] += docN[a];
            sums[facet][source][a][ord] += docValues[0][a];
            var m = mins[facet][source][a];
            if (docValues[1][a] < m[ord]) m[ord] = docValues[1][a];
            var x = maxs[facet][source][a];
            if (docValues[2][a] > x[ord]) x[ord] = docValues[2][a];
        }
    }

    /** This document's values of aggregated field a: how many, their sum, min and max (numbers are stored as sortable longs). */
    private void aggregate(FacetColumns.Column c, int doc, int a) {
        docN[a] = 0;
        int from, to;
        if (c.start == null) {
            if (c.ords[doc] < 0) return;
            from = doc; to = doc + 1;
        } else { from = c.start[doc]; to = c.start[doc + 1]; }
        double sum = 0, min = Double.POSITIVE_INFINITY, max = Double.NEGATIVE_INFINITY;
        for (var k = from; k < to; k++) {
            var v = NumericUtils.sortableLongToDouble(c.numbers[c.ords[k]]);
            sum += v; min = Math.min(min, v); max = Math.max(max, v);
        }
        docN[a] = to - from;
        docValues[0][a] = sum; docValues[1][a] = min; docValues[2][a] = max;
    }

    /** The segment's non-zero counters, into the per-value totals (string values looked up in the segment's dictionary). */
    private void fold() throws IOException {
        if (leaf == null) return;
        for (var i = 0; i < specs.length; i++) {
            if (specs[i].kind == RANGES) continue;
            var s = specs[i];
            var totals = byValue.get(i);
            var fields = s.aggregateFields.length;
            for (var j = 0; j < sources[i].length; j++) {
                var c = sources[i][j];
                var counted = counts[i][j];
                SortedSetDocValues dictionary = c.numbers == null ? DocValues.getSortedSet(leaf.reader(), s.stringFields[j]) : null;
                for (var ord = 0; ord < counted.length; ord++) {
                    if (counted[ord] == 0) continue;
                    Object value = dictionary != null ? dictionary.lookupOrd(ord).utf8ToString()
                        : s.kind == HISTOGRAM ? (Object) (double) (Math.floorDiv(c.numbers[ord] - s.origin, s.interval) * s.interval / s.unit)
                        : (Object) NumericUtils.sortableLongToDouble(c.numbers[ord]);
                    var acc = totals.computeIfAbsent(value, v -> new Acc(fields));
                    acc.count += counted[ord];
                    for (var a = 0; a < fields; a++) {
                        acc.n[a] += ns[i][j][a][ord];
                        acc.sum[a] += sums[i][j][a][ord];
                        acc.min[a] = Math.min(acc.min[a], mins[i][j][a][ord]);
                        acc.max[a] = Math.max(acc.max[a], maxs[i][j][a][ord]);
                    }
                }
            }
        }
        leaf = null;
    }

    /** Everything counted: the total, then per facet its values (term facets) or ranges, each with its aggregates. */
    void write(DataOutputStream w) throws IOException {
        fold();
        w.writeLong(total);
        w.writeInt(specs.length);
        for (var i = 0; i < specs.length; i++) {
            if (specs[i].kind == RANGES) {
                var accs = byRange.get(i);
                w.writeInt(accs.length);
                for (var acc : accs) writeAcc(w, acc);
                continue;
            }
            var totals = byValue.get(i);
            w.writeInt(totals.size());
            for (var e : totals.entrySet()) {
                if (e.getKey() instanceof String s) { w.writeByte(LuceneHost.F_KEYWORD); LuceneHost.writeString(w, s); }
                else { w.writeByte(LuceneHost.F_DOUBLE); w.writeDouble((Double) e.getKey()); }
                writeAcc(w, e.getValue());
            }
        }
    }

    private static void writeAcc(DataOutputStream w, Acc acc) throws IOException {
        w.writeLong(acc.count);
        w.writeInt(acc.n.length);
        for (var a = 0; a < acc.n.length; a++) { w.writeLong(acc.n[a]); w.writeDouble(acc.sum[a]); w.writeDouble(acc.min[a]); w.writeDouble(acc.max[a]); }
    }

    static Spec readSpec(DataInputStream in, IndexSearcher searcher, LuceneHost host) throws IOException {
        var s = new Spec();
        s.kind = in.readByte();
        if (s.kind == TERMS) {
            s.stringFields = readStrings(in);
            s.numberFields = readStrings(in);
        } else if (s.kind == HISTOGRAM) {
            s.numberFields = new String[] { LuceneHost.readString(in) };
            s.interval = in.readLong();
            s.origin = in.readLong();
            s.unit = in.readLong();
            if (s.interval <= 0 || s.unit <= 0) throw new IllegalArgumentException("a histogram needs a positive interval and unit");
        } else {
            s.ranges = new Query[in.readInt()];
            s.rangeWeights = new Weight[s.ranges.length];
            for (var r = 0; r < s.ranges.length; r++) {
                s.ranges[r] = searcher.rewrite(host.readQuery(in));
                s.rangeWeights[r] = searcher.createWeight(s.ranges[r], ScoreMode.COMPLETE_NO_SCORES, 1f);
            }
        }
        s.aggregateFields = readStrings(in);
        return s;
    }

    private static String[] readStrings(DataInputStream in) throws IOException {
        var a = new String[in.readInt()];
        for (var i = 0; i < a.length; i++) a[i] = LuceneHost.readString(in);
        return a;
    }
}
