using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Query = Lucene.Net.Search.Query;

namespace Magpie.Indexer.Lucene.Vectors;

/// <summary>
/// <c>vector.search</c>: when a searcher asks for its weight, the field's vectors in the index (only those of entries the filter
/// matches, live ones) are compared with the query's, and the best <c>K</c> at or above the threshold are kept; the weight's
/// scorers then walk those, scored by their similarity. A segment with a nearest-neighbour graph (<see cref="VectorGraphs"/>,
/// cosine only) is searched through it: the graph proposes candidates, each scored exactly from the column (so scores are the
/// true similarities, and only which vectors are found is approximate). With a filter, a segment whose matches are few is
/// scanned over them (pre-filtering); otherwise the graph is asked for as many more candidates as the filter and deletes drop,
/// and if fewer than K pass, the segment is scanned after all. <c>exact(…)</c>, other similarities and segments without a graph
/// are scanned: every answer is the true nearest, as RavenDB's exact search and Elasticsearch's <c>script_score</c> are. Binary
/// fields are always scanned: a vector's bits are 48 bytes at 384 dimensions, and comparing them is one XOR and a bit count.
/// </summary>
internal sealed class NearestVectors(VectorSearchQuery search, Query? filter, VectorColumns columns) : Query
{
    private readonly VectorGraphs? _graphs = columns.Graphs;

    /// <summary>A filter matching at most this share of a segment's vectors is answered by scanning its matches (at a tenth, scanning them was faster than asking the graph for ten times the candidates).</summary>
    private const double PreFilterShare = 0.15;

    /// <summary>Candidates asked of a graph: at least this many, and 4 × k (the exact re-scoring then picks the k best).</summary>
    private const int MinimumCandidates = 100;

    private readonly float _queryNorm = System.Numerics.Tensors.TensorPrimitives.Norm((ReadOnlySpan<float>)search.Vector);
    private (IndexReader Reader, Dictionary<int, (int[] Docs, float[] Scores)> Found)? _last;

    public override Weight CreateWeight(IndexSearcher searcher)
    {
        // A search asks twice (the normalized weight, then the search itself): the scan runs once per reader.
        var last = _last;
        if (last is not { } l || !ReferenceEquals(l.Reader, searcher.IndexReader))
        {
            _last = last = (searcher.IndexReader, Nearest(searcher));
            _graphs?.Sweep(searcher.IndexReader);
        }
        return new FixedHits.HitsWeight(this, last.Value.Found, (doc, score) => score is { } s
            ? new Explanation(s, $"{search.Similarity} similarity of {search.Field}, among the {search.K} nearest")
            : new Explanation(0, "not among the nearest vectors"));
    }

    /// <summary>
    /// The k nearest over every segment: each segment's own k nearest (its graph's candidates, or a scan), the segments searched side
    /// by side on the machine's cores (one query's graph searches one after another were most of its time: 43 segments × 0.3 ms at
    /// 1M vectors), then merged.
    /// </summary>
    private Dictionary<int, (int[] Docs, float[] Scores)> Nearest(IndexSearcher searcher)
    {
        var filterWeight = filter is null ? null : searcher.CreateNormalizedWeight(filter);
        var query = new QueryForms(search);
        var leaves = searcher.IndexReader.Leaves;
        var perLeaf = new List<(int Doc, float Similarity)>?[leaves.Count];
        try
        {
            Parallel.For(0, leaves.Count, new ParallelOptions { MaxDegreeOfParallelism = Environment.ProcessorCount },
                i => perLeaf[i] = LeafNearest(leaves[i], filterWeight, query));
        }
        catch (AggregateException e) when (e.InnerExceptions.Count > 0)
        {
            System.Runtime.ExceptionServices.ExceptionDispatchInfo.Capture(e.InnerExceptions[0]).Throw();
        }
        var best = new PriorityQueue<(int Leaf, int Doc), float>(search.K + 1);
        for (var i = 0; i < leaves.Count; i++)
            foreach (var (doc, similarity) in perLeaf[i] ?? [])
                if (best.Count < search.K) best.Enqueue((leaves[i].Ord, doc), similarity);
                else if (best.TryPeek(out _, out var worst) && similarity > worst) best.EnqueueDequeue((leaves[i].Ord, doc), similarity);
        var byLeaf = new Dictionary<int, List<(int Doc, float Score)>>();
        while (best.TryDequeue(out var hit, out var score))
        {
            if (!byLeaf.TryGetValue(hit.Leaf, out var list)) byLeaf[hit.Leaf] = list = [];
            list.Add((hit.Doc, score));
        }
        return FixedHits.ByLeaf(byLeaf);
    }

    /// <summary>The query vector in each form a segment may compare with: as given, at unit length (graphs), as int8 or as bits.</summary>
    private sealed class QueryForms
    {
        public QueryForms(VectorSearchQuery search)
        {
            Unit = NearestVectors.Unit(search.Vector);
            if (search.Quantization == VectorQuantization.Binary)
            {
                Bits = new byte[(search.Vector.Length + 7) / 8];
                VectorMath.Binarize(search.Vector, Bits);
            }
            if (search.Quantization != VectorQuantization.Int8) return;
            Bytes = new sbyte[search.Vector.Length];
            Scale = VectorMath.Quantize(search.Vector, Bytes);
        }

        public float[] Unit { get; }
        public sbyte[]? Bytes { get; }
        public float Scale { get; } = 1f;
        public byte[]? Bits { get; }
    }

    /// <summary>One segment's k nearest (at least as similar as asked), among the filter's matches and its live documents.</summary>
    private List<(int Doc, float Similarity)>? LeafNearest(AtomicReaderContext leaf, Weight? filterWeight, QueryForms query)
    {
        if (columns.Of(leaf.AtomicReader, search.Field, search.Quantization) is not { Docs.Length: > 0 } column) return null;
        if (column.Dimensions != search.Vector.Length)
            throw new IndexEngineException($"the query's vector has {search.Vector.Length} dimensions; the field '{search.Field}' holds vectors of {column.Dimensions}");
        if (search.Embedder is { } embedder) VectorColumns.CheckEmbedder(leaf.AtomicReader, search.Field, embedder);
        var live = leaf.AtomicReader.LiveDocs;
        FixedBitSet? matches = null;
        var matching = column.Docs.Length;
        if (filterWeight is not null)
        {
            if (filterWeight.GetScorer(leaf, live) is not { } accepted) return null;
            matches = new FixedBitSet(leaf.AtomicReader.MaxDoc);
            int d;
            while ((d = accepted.NextDoc()) != DocIdSetIterator.NO_MORE_DOCS) matches.Set(d);
            matching = matches.Cardinality;
        }
        var best = new PriorityQueue<int, float>(search.K + 1);
        float Similarity(int slot) => search.Quantization switch
        {
            VectorQuantization.Int8 => VectorMath.Similarity(search.Similarity, column.Bytes.AsSpan(slot * column.Dimensions, column.Dimensions), column.Scales![slot], column.Norms[slot], query.Bytes, query.Scale, _queryNorm),
            VectorQuantization.Binary => VectorMath.BinarySimilarity(column.Bits.AsSpan(slot * column.BitsPerVector, column.BitsPerVector), query.Bits),
            _ => VectorMath.Similarity(search.Similarity, column.Floats.AsSpan(slot * column.Dimensions, column.Dimensions), column.Norms[slot], search.Vector, _queryNorm),
        };
        void Offer(int doc, float similarity)
        {
            if (similarity < search.MinimumSimilarity) return;
            if (best.Count < search.K) best.Enqueue(doc, similarity);
            else if (best.TryPeek(out _, out var worst) && similarity > worst) best.EnqueueDequeue(doc, similarity);
        }
        var graph = search.Exact || search.Similarity != VectorSimilarity.Cosine || search.Quantization == VectorQuantization.Binary || matching < column.Docs.Length * PreFilterShare
            ? null : _graphs?.For(leaf.AtomicReader, search.Field, column);
        var answered = false;
        if (graph is not null)
        {
            // Candidates the filter and deletes will drop are asked for too, in proportion.
            var liveShare = live is null ? 1.0 : (double)leaf.AtomicReader.NumDocs / Math.Max(1, leaf.AtomicReader.MaxDoc);
            var wanted = (int)Math.Min(column.Docs.Length, Math.Ceiling(Math.Max(MinimumCandidates, 4 * search.K) * column.Docs.Length / (double)matching / liveShare));
            var found = graph.Search(query.Unit, wanted, out var keys);
            var passed = new List<(int Doc, float Similarity)>(found);
            for (var i = 0; i < found; i++)
            {
                var slot = (int)keys[i];
                var doc = column.Docs[slot];
                if (live is not null && !live.Get(doc) || matches is not null && !matches.Get(doc)) continue;
                passed.Add((doc, Similarity(slot)));
            }
            if (passed.Count >= Math.Min(search.K, matching) || found >= column.Docs.Length)
            {
                foreach (var (doc, similarity) in passed) Offer(doc, similarity);
                answered = true;
            }
        }
        // Scanned: every vector of the segment, or the filter's matches, each looked up in the column.
        if (!answered && matches is null)
            for (var slot = 0; slot < column.Docs.Length; slot++)
            {
                var doc = column.Docs[slot];
                if (live is not null && !live.Get(doc)) continue;
                Offer(doc, Similarity(slot));
            }
        else if (!answered)
            for (var doc = matches!.NextSetBit(0); doc >= 0; doc = doc + 1 < matches.Length ? matches.NextSetBit(doc + 1) : -1)
                if (column.Slots[doc] is var slot and >= 0) Offer(doc, Similarity(slot));
        var nearest = new List<(int Doc, float Similarity)>(best.Count);
        while (best.TryDequeue(out var doc, out var similarity)) nearest.Add((doc, similarity));
        return nearest;
    }

    private static float[] Unit(float[] vector)
    {
        var unit = (float[])vector.Clone();
        VectorMath.ToUnitLength(unit);
        return unit;
    }

    public override string ToString(string field) => $"vector.search({search.Field}, k={search.K})";

    public override bool Equals(object? obj) => ReferenceEquals(this, obj);

    public override int GetHashCode() => System.Runtime.CompilerServices.RuntimeHelpers.GetHashCode(this);
}
