using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Search;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// Counts a query's facets in one pass over its matching documents: per document, each term facet adds to the counters
/// of the document's value ordinals and each range facet to the ranges whose document sets hold it; aggregations (count,
/// sum, min, max of double fields) go along. Per segment the counters are arrays indexed by segment ordinal; a segment's
/// non-zero counters are folded into one map by value when the pass moves on. Every value is returned (no top N here):
/// shards and owners are merged exactly by the caller, which then orders and cuts.
/// </summary>
internal sealed class FacetCounter : ICollector
{
    /// <summary>Count of documents, then per aggregated field: how many values, their sum, min and max.</summary>
    private sealed class Totals(int fields)
    {
        public long Count;
        public readonly long[] N = new long[fields];
        public readonly double[] Sum = new double[fields];
        public readonly double[] Min = Filled(fields, double.PositiveInfinity);
        public readonly double[] Max = Filled(fields, double.NegativeInfinity);

        public void Add(long n, double sum, double min, double max, int a)
        {
            N[a] += n;
            Sum[a] += sum;
            if (min < Min[a]) Min[a] = min;
            if (max > Max[a]) Max[a] = max;
        }

        public FacetBucket Bucket(string? text, double? number, int range) =>
            new(text, number, range, Count, [.. Enumerable.Range(0, N.Length).Select(a => new FieldTotals(N[a], Sum[a], Min[a], Max[a]))]);
    }

    /// <summary>
    /// One facet in the current segment: the columns it counts (term and histogram facets), and per source its counters by
    /// slot (a slot is an ordinal; for a histogram, the bucket its ordinal's value falls in), or the ranges' document sets.
    /// </summary>
    private sealed class Segment
    {
        public FacetColumns.Column[] Sources = [];
        public int[]?[] SlotOf = [];          // [source][ord] → slot; null: slot = ord
        public object[][] SlotValue = [];     // [source][slot] → the value reported (histogram buckets), else looked up at fold
        public long[][] Counts = [];          // [source][slot]; reused from segment to segment, zero between them
        public int[][] Touched = [];          // [source] → the slots counted in this segment, in the order first counted
        public int[] TouchedCount = [];       // [source] → how many of Touched are in use (past Touched's length: too many to list)
        public int[] SlotCount = [];          // [source] → this segment's slots (Counts may be longer, kept from a bigger segment)
        public long[][][] N = [];             // [source][field][slot]
        public double[][][] Sum = [], Min = [], Max = [];
        public FixedBitSet[] Ranges = [];
        public FacetColumns.Column[] Aggregates = [];
        public bool[] AggregatesDates = [];   // [field] → a date field (@ticks): its values are aggregated as epoch seconds
    }

    private readonly FacetColumns _columns;
    private readonly LuceneIndex _index;
    private readonly IReadOnlyList<FacetSpec> _specs;
    private readonly bool[] _isRange;
    private readonly Weight[][] _rangeWeights;
    private readonly Dictionary<object, Totals>[] _byValue;
    private readonly Totals[][] _byRange;
    private readonly Segment[] _segment;
    // A term facet over one string field without aggregates folds by value id (FacetColumns.ValueIds): its counts by id and the ids counted.
    private readonly bool[] _byId;
    private readonly long[]?[] _idCounts;
    private readonly List<int>?[] _idsCounted;
    private readonly FacetColumns.ValueTable?[] _idTable;
    private readonly int[]?[] _segmentIds;
    private AtomicReaderContext? _leaf;
    private long _total;
    // This document's values of each aggregated field of the facet being counted: how many, sum, min, max.
    private long[] _n = [];
    private double[] _sum = [], _min = [], _max = [];

    public FacetCounter(FacetColumns columns, LuceneIndex index, IndexSearcher searcher, IReadOnlyList<FacetSpec> specs, Func<SearchQuery, Query> translate)
    {
        _columns = columns;
        _index = index;
        _specs = specs;
        _isRange = [.. specs.Select(s => s is RangeFacetSpec)];
        _rangeWeights = [.. specs.Select(s => s is RangeFacetSpec r ? r.Ranges.Select(q => searcher.CreateNormalizedWeight(translate(q))).ToArray() : [])];
        _byValue = [.. specs.Select(_ => new Dictionary<object, Totals>())];
        _byRange = [.. specs.Select(s => s is RangeFacetSpec r ? r.Ranges.Select(_ => new Totals(s.AggregateFields.Count)).ToArray() : [])];
        _segment = [.. specs.Select(_ => new Segment())];
        _byId = [.. specs.Select(s => s is TermFacetSpec { StringFields.Count: 1, NumberFields.Count: 0, AggregateFields.Count: 0 })];
        _idCounts = new long[]?[specs.Count];
        _idsCounted = [.. _byId.Select(b => b ? new List<int>() : null)];
        _idTable = new FacetColumns.ValueTable?[specs.Count];
        _segmentIds = new int[]?[specs.Count];
        var most = specs.Count == 0 ? 0 : specs.Max(s => s.AggregateFields.Count);
        (_n, _sum, _min, _max) = (new long[most], new double[most], new double[most], new double[most]);
    }

    public bool AcceptsDocsOutOfOrder => true;

    public void SetScorer(Scorer scorer) { }

    public void SetNextReader(AtomicReaderContext context)
    {
        Fold();
        _leaf = context;
        var reader = context.AtomicReader;
        for (var i = 0; i < _specs.Count; i++)
        {
            var spec = _specs[i];
            var s = _segment[i];
            s.Aggregates = [.. spec.AggregateFields.Select(f => _columns.Numbers(_index, reader, f))];
            s.AggregatesDates = [.. spec.AggregateFields.Select(f => f.EndsWith(Contracts.Indexes.EntryFields.Ticks, StringComparison.Ordinal))];
            switch (spec)
            {
                case RangeFacetSpec r:
                    s.Ranges = [.. r.Ranges.Select((q, k) => _columns.Matching(_index, context, _rangeWeights[i][k], _rangeWeights[i][k].Query.ToString()))];
                    break;
                case TermFacetSpec t:
                    s.Sources = [.. t.StringFields.Select(f => _columns.Strings(_index, reader, f)), .. t.NumberFields.Select(f => _columns.Numbers(_index, reader, f))];
                    if (_byId[i]) _segmentIds[i] = _columns.ValueIds(_index, reader, t.StringFields[0], out _idTable[i]!);
                    break;
                case HistogramFacetSpec h:
                    s.Sources = [_columns.Numbers(_index, reader, h.Field)];
                    break;
            }
            s.SlotOf = [.. s.Sources.Select(_ => (int[]?)null)];
            s.SlotValue = [.. s.Sources.Select(_ => Array.Empty<object>())];
            if (spec is HistogramFacetSpec histogram) (s.SlotOf[0], s.SlotValue[0]) = Buckets(reader, s.Sources[0], histogram);
            var slots = s.Sources.Select((c, j) => s.SlotOf[j] is null ? c.ValueCount : s.SlotValue[j].Length).ToArray();
            var fields = spec.AggregateFields.Count;
            // A small match touches few of a segment's values: the counters are kept from the last segment (zeroed at its fold), and
            // the slots counted are listed, so the fold visits those alone instead of every value of the segment.
            if (s.Counts.Length != slots.Length) (s.Counts, s.Touched) = (new long[slots.Length][], new int[slots.Length][]);
            s.TouchedCount = new int[slots.Length];
            s.SlotCount = slots;
            for (var j = 0; j < slots.Length; j++)
            {
                if (s.Counts[j] is not { } kept || kept.Length < slots[j]) s.Counts[j] = new long[Math.Max(slots[j], (s.Counts[j]?.Length ?? 0) * 2)];
                s.Touched[j] ??= new int[1024];
            }
            s.N = [.. slots.Select(n => Enumerable.Range(0, fields).Select(_ => new long[n]).ToArray())];
            s.Sum = [.. slots.Select(n => Enumerable.Range(0, fields).Select(_ => new double[n]).ToArray())];
            s.Min = [.. slots.Select(n => Enumerable.Range(0, fields).Select(_ => Filled(n, double.PositiveInfinity)).ToArray())];
            s.Max = [.. slots.Select(n => Enumerable.Range(0, fields).Select(_ => Filled(n, double.NegativeInfinity)).ToArray())];
        }
    }

    // Per document, for every match: the spec list and its kinds are read from arrays, and counting without aggregates skips
    // the per-field loop (what a plain facet asks). A match-all facet query over a million posts spent half its time here.
    public void Collect(int doc)
    {
        _total++;
        var segments = _segment;
        for (var i = 0; i < segments.Length; i++)
        {
            var s = segments[i];
            var fields = s.Aggregates.Length;
            for (var a = 0; a < fields; a++) Aggregate(s.Aggregates[a], doc, a, s.AggregatesDates[a]);
            if (_isRange[i])
            {
                var ranges = s.Ranges;
                var totals = _byRange[i];
                for (var r = 0; r < ranges.Length; r++)
                {
                    if (!ranges[r].Get(doc)) continue;
                    if (fields == 0) totals[r].Count++;
                    else Add(totals[r], fields);
                }
                continue;
            }
            var sources = s.Sources;
            for (var j = 0; j < sources.Length; j++)
            {
                var c = sources[j];
                var slotOf = s.SlotOf[j];
                if (c.Start is null)
                {
                    var ord = c.Ords[doc];
                    if (ord < 0) continue;
                    var slot = slotOf is null ? ord : slotOf[ord];
                    if (fields == 0)
                    {
                        if (s.Counts[j][slot]++ == 0) Touch(s, j, slot);
                    }
                    else Add(s, j, slot, fields);
                }
                else
                {
                    // A histogram counts a document once per bucket (two dates in one bucket: once), as a term facet counts it once per value.
                    var last = -1;
                    for (var k = c.Start[doc]; k < c.Start[doc + 1]; k++)
                    {
                        var slot = slotOf is null ? c.Ords[k] : slotOf[c.Ords[k]];
                        if (slot != last) Add(s, j, slot, fields);
                        last = slot;
                    }
                }
            }
        }
    }

    private static void Touch(Segment s, int source, int slot)
    {
        var n = s.TouchedCount[source]++;
        if (n < s.Touched[source].Length) s.Touched[source][n] = slot;
    }

    private void Add(Segment s, int source, int slot, int fields)
    {
        if (s.Counts[source][slot]++ == 0) Touch(s, source, slot);
        for (var a = 0; a < fields; a++)
        {
            if (_n[a] == 0) continue;
            s.N[source][a][slot] += _n[a];
            s.Sum[source][a][slot] += _sum[a];
            if (_min[a] < s.Min[source][a][slot]) s.Min[source][a][slot] = _min[a];
            if (_max[a] > s.Max[source][a][slot]) s.Max[source][a][slot] = _max[a];
        }
    }

    private sealed record BucketMap(int[] SlotOf, object[] Values);

    /// <summary>
    /// Each ordinal's bucket (ordinals are in value order, so buckets are runs of them) and each bucket's reported value, kept
    /// with the segment's columns: a date field has about one ordinal per document, and working out a million buckets per query
    /// was a twentieth of a time-grouped aggregate over 1M posts. A dashboard asks the same few intervals again and again.
    /// </summary>
    private (int[] SlotOf, object[] Values) Buckets(AtomicReader reader, FacetColumns.Column column, HistogramFacetSpec h)
    {
        var what = $"h:{h.Field}:{h.Interval}:{h.Origin}:{h.Unit}:{h.Calendar}";
        var map = _columns.Other(_index, reader, what, () => BucketsOf(column, h), m => 64L + 4L * m.SlotOf.Length + 32L * m.Values.Length);
        return (map.SlotOf, map.Values);
    }

    private static BucketMap BucketsOf(FacetColumns.Column column, HistogramFacetSpec h)
    {
        var slotOf = new int[column.ValueCount];
        var values = new List<object>();
        long? current = null;
        for (var ord = 0; ord < slotOf.Length; ord++)
        {
            var start = h.BucketStart(column.Numbers![ord]);
            if (start != current)
            {
                values.Add((double)(start - h.Origin) / h.Unit);
                current = start;
            }
            slotOf[ord] = values.Count - 1;
        }
        return new BucketMap(slotOf, [.. values]);
    }

    private void Add(Totals totals, int fields)
    {
        totals.Count++;
        for (var a = 0; a < fields; a++)
            if (_n[a] > 0) totals.Add(_n[a], _sum[a], _min[a], _max[a], a);
    }

    /// <summary>This document's values of aggregated field <paramref name="a"/> (double fields: their sortable longs decoded; dates,
    /// <paramref name="dates"/>: their ticks as epoch seconds, which a double holds to well under a microsecond).</summary>
    private void Aggregate(FacetColumns.Column c, int doc, int a, bool dates)
    {
        _n[a] = 0;
        int from, to;
        if (c.Start is null)
        {
            if (c.Ords[doc] < 0) return;
            (from, to) = (doc, doc + 1);
        }
        else (from, to) = (c.Start[doc], c.Start[doc + 1]);
        double sum = 0, min = double.PositiveInfinity, max = double.NegativeInfinity;
        for (var k = from; k < to; k++)
        {
            var raw = c.Numbers![c.Ords[k]];
            var v = dates ? (raw - DateTime.UnixEpoch.Ticks) / (double)TimeSpan.TicksPerSecond : NumericUtils.SortableInt64ToDouble(raw);
            sum += v;
            min = Math.Min(min, v);
            max = Math.Max(max, v);
        }
        (_n[a], _sum[a], _min[a], _max[a]) = (to - from, sum, min, max);
    }

    /// <summary>The segment's counters into the per-value totals (string values from the segment's decoded ordinals, <see cref="FacetColumns.Texts"/>).</summary>
    private void Fold()
    {
        if (_leaf is not { } leaf) return;
        for (var i = 0; i < _specs.Count; i++)
        {
            var spec = _specs[i];
            if (spec is RangeFacetSpec) continue;
            var s = _segment[i];
            var strings = spec is TermFacetSpec t ? t.StringFields.Count : 0;
            var fields = spec.AggregateFields.Count;
            if (_byId[i])
            {
                FoldById(i, s);
                continue;
            }
            for (var j = 0; j < s.Sources.Length; j++)
            {
                var texts = j < strings ? _columns.Texts(_index, leaf.AtomicReader, ((TermFacetSpec)spec).StringFields[j]) : null;
                var counts = s.Counts[j];
                var listed = s.TouchedCount[j] <= s.Touched[j].Length;
                var visit = listed ? s.TouchedCount[j] : s.SlotCount[j];
                for (var v = 0; v < visit; v++)
                {
                    var slot = listed ? s.Touched[j][v] : v;
                    if (counts[slot] == 0) continue;
                    object value;
                    if (texts is not null) value = texts[slot];
                    else if (s.SlotOf[j] is not null) value = s.SlotValue[j][slot];
                    else value = NumericUtils.SortableInt64ToDouble(s.Sources[j].Numbers![slot]);
                    if (!_byValue[i].TryGetValue(value, out var totals)) _byValue[i][value] = totals = new Totals(fields);
                    totals.Count += counts[slot];
                    for (var a = 0; a < fields; a++) totals.Add(s.N[j][a][slot], s.Sum[j][a][slot], s.Min[j][a][slot], s.Max[j][a][slot], a);
                    counts[slot] = 0;   // the counters go on to the next segment zeroed
                }
                s.TouchedCount[j] = 0;
            }
        }
        _leaf = null;
    }

    /// <summary>Adds the segment's counts of facet <paramref name="i"/> to its counts by value id, and zeroes them for the next segment.</summary>
    private void FoldById(int i, Segment s)
    {
        var ids = _segmentIds[i]!;
        var counts = s.Counts[0];
        var total = _idCounts[i];
        var size = _idTable[i]!.Count;
        if (total is null || total.Length < size) Array.Resize(ref _idCounts[i], Math.Max(size, (total?.Length ?? 0) * 2));
        total = _idCounts[i]!;
        var counted = _idsCounted[i]!;
        var listed = s.TouchedCount[0] <= s.Touched[0].Length;
        var visit = listed ? s.TouchedCount[0] : s.SlotCount[0];
        for (var v = 0; v < visit; v++)
        {
            var slot = listed ? s.Touched[0][v] : v;
            var n = counts[slot];
            if (n == 0) continue;
            var id = ids[slot];
            if (total[id] == 0) counted.Add(id);
            total[id] += n;
            counts[slot] = 0;
        }
        s.TouchedCount[0] = 0;
    }

    /// <summary>Everything counted: the total, then per facet its values (term and histogram facets) or ranges, each with its aggregates.</summary>
    public FacetCounts Result()
    {
        Fold();
        var facets = new List<IReadOnlyList<FacetBucket>>(_specs.Count);
        for (var i = 0; i < _specs.Count; i++)
        {
            if (_byId[i])
            {
                var table = _idTable[i];
                facets.Add(table is null ? [] : [.. _idsCounted[i]!.Select(id => new FacetBucket(table.Text(id), null, -1, _idCounts[i]![id], []))]);
                continue;
            }
            facets.Add(_specs[i] is RangeFacetSpec
                ? [.. _byRange[i].Select((t, r) => t.Bucket(null, null, r))]
                : [.. _byValue[i].Select(v => v.Key is string text ? v.Value.Bucket(text, null, -1) : v.Value.Bucket(null, (double)v.Key, -1))]);
        }
        return new FacetCounts(_total, facets);
    }

    private static double[] Filled(int n, double value)
    {
        var a = new double[n];
        Array.Fill(a, value);
        return a;
    }
}
