using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
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
/// are scanned: every answer is the true nearest, as RavenDB's exact search and Elasticsearch's <c>script_score</c> are.
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

    private Dictionary<int, (int[] Docs, float[] Scores)> Nearest(IndexSearcher searcher)
    {
        var best = new PriorityQueue<(int Leaf, int Doc), float>(search.K + 1);
        var filterWeight = filter is null ? null : searcher.CreateNormalizedWeight(filter);
        sbyte[]? queryBytes = null;
        var queryScale = 1f;
        float[]? unitQuery = null;
        foreach (var leaf in searcher.IndexReader.Leaves)
        {
            if (columns.Of(leaf.AtomicReader, search.Field, search.Int8) is not { Docs.Length: > 0 } column) continue;
            if (column.Dimensions != search.Vector.Length)
                throw new IndexEngineException($"the query's vector has {search.Vector.Length} dimensions; the field '{search.Field}' holds vectors of {column.Dimensions}");
            if (search.Int8 && queryBytes is null)
            {
                queryBytes = new sbyte[search.Vector.Length];
                queryScale = VectorMath.Quantize(search.Vector, queryBytes);
            }
            var live = leaf.AtomicReader.LiveDocs;
            FixedBitSet? matches = null;
            var matching = column.Docs.Length;
            if (filterWeight is not null)
            {
                if (filterWeight.GetScorer(leaf, live) is not { } accepted) continue;
                matches = new FixedBitSet(leaf.AtomicReader.MaxDoc);
                int d;
                while ((d = accepted.NextDoc()) != DocIdSetIterator.NO_MORE_DOCS) matches.Set(d);
                matching = matches.Cardinality;
            }
            float Similarity(int slot) => search.Int8
                ? VectorMath.Similarity(search.Similarity, column.Bytes.AsSpan(slot * column.Dimensions, column.Dimensions), column.Scales![slot], column.Norms[slot], queryBytes, queryScale, _queryNorm)
                : VectorMath.Similarity(search.Similarity, column.Floats.AsSpan(slot * column.Dimensions, column.Dimensions), column.Norms[slot], search.Vector, _queryNorm);
            void Offer(int doc, float similarity)
            {
                if (similarity < search.MinimumSimilarity) return;
                if (best.Count < search.K) best.Enqueue((leaf.Ord, doc), similarity);
                else if (best.TryPeek(out _, out var worst) && similarity > worst) best.EnqueueDequeue((leaf.Ord, doc), similarity);
            }
            var graph = search.Exact || search.Similarity != VectorSimilarity.Cosine || matching < column.Docs.Length * PreFilterShare
                ? null : _graphs?.For(leaf.AtomicReader, search.Field, column);
            if (graph is not null)
            {
                unitQuery ??= Unit(search.Vector);
                // Candidates the filter and deletes will drop are asked for too, in proportion.
                var liveShare = live is null ? 1.0 : (double)leaf.AtomicReader.NumDocs / Math.Max(1, leaf.AtomicReader.MaxDoc);
                var wanted = (int)Math.Min(column.Docs.Length, Math.Ceiling(Math.Max(MinimumCandidates, 4 * search.K) * column.Docs.Length / (double)matching / liveShare));
                var found = graph.Search(unitQuery, wanted, out var keys);
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
                    continue;
                }
            }
            // Scanned: every vector of the segment, or the filter's matches, each looked up in the column.
            if (matches is null)
                for (var slot = 0; slot < column.Docs.Length; slot++)
                {
                    var doc = column.Docs[slot];
                    if (live is not null && !live.Get(doc)) continue;
                    Offer(doc, Similarity(slot));
                }
            else
                for (var doc = matches.NextSetBit(0); doc >= 0; doc = doc + 1 < matches.Length ? matches.NextSetBit(doc + 1) : -1)
                    if (column.Slots[doc] is var slot and >= 0) Offer(doc, Similarity(slot));
        }
        var byLeaf = new Dictionary<int, List<(int Doc, float Score)>>();
        while (best.TryDequeue(out var hit, out var score))
        {
            if (!byLeaf.TryGetValue(hit.Leaf, out var list)) byLeaf[hit.Leaf] = list = [];
            list.Add((hit.Doc, score));
        }
        return FixedHits.ByLeaf(byLeaf);
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
