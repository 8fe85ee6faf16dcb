using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Search;
using Query = Lucene.Net.Search.Query;

namespace Magpie.Indexer.Lucene.Vectors;

/// <summary>
/// <c>vector.search</c>, exact: when a searcher asks for its weight, every vector of the field in the index (only those of entries the
/// filter matches, live ones) is compared with the query's, and the best <c>K</c> at or above the threshold are kept; the weight's
/// scorers then walk those, scored by their similarity. A brute-force scan, as RavenDB's exact search and Elasticsearch's
/// <c>script_score</c> are: every answer is the true nearest, whatever the filter. An approximate graph (HNSW) would replace the
/// scan in <see cref="Nearest"/> — a per-segment graph built beside the vector column, searched with the filter as an accept set.
/// </summary>
internal sealed class NearestVectors(VectorSearchQuery search, Query? filter, VectorColumns columns) : Query
{
    private readonly float _queryNorm = System.Numerics.Tensors.TensorPrimitives.Norm((ReadOnlySpan<float>)search.Vector);
    private (IndexReader Reader, Dictionary<int, (int[] Docs, float[] Scores)> Found)? _last;

    public override Weight CreateWeight(IndexSearcher searcher)
    {
        // A search asks twice (the normalized weight, then the search itself): the scan runs once per reader.
        var last = _last;
        if (last is not { } l || !ReferenceEquals(l.Reader, searcher.IndexReader))
        {
            _last = last = (searcher.IndexReader, Nearest(searcher));
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
            var accepted = filterWeight?.GetScorer(leaf, live);
            if (filterWeight is not null && accepted is null) continue;
            var dims = column.Dimensions;
            // Unfiltered: every vector of the segment; filtered: the filter's matches (live ones), each looked up in the column.
            var slot = -1;
            while (true)
            {
                int doc;
                if (accepted is null)
                {
                    if (++slot == column.Docs.Length) break;
                    doc = column.Docs[slot];
                    if (live is not null && !live.Get(doc)) continue;
                }
                else
                {
                    if ((doc = accepted.NextDoc()) == DocIdSetIterator.NO_MORE_DOCS) break;
                    if ((slot = column.Slots[doc]) < 0) continue;
                }
                var similarity = search.Int8
                    ? VectorMath.Similarity(search.Similarity, column.Bytes.AsSpan(slot * dims, dims), column.Scales![slot], column.Norms[slot], queryBytes, queryScale, _queryNorm)
                    : VectorMath.Similarity(search.Similarity, column.Floats.AsSpan(slot * dims, dims), column.Norms[slot], search.Vector, _queryNorm);
                if (similarity < search.MinimumSimilarity) continue;
                if (best.Count < search.K) best.Enqueue((leaf.Ord, doc), similarity);
                else if (best.TryPeek(out _, out var worst) && similarity > worst) best.EnqueueDequeue((leaf.Ord, doc), similarity);
            }
        }
        var byLeaf = new Dictionary<int, List<(int Doc, float Score)>>();
        while (best.TryDequeue(out var hit, out var score))
        {
            if (!byLeaf.TryGetValue(hit.Leaf, out var list)) byLeaf[hit.Leaf] = list = [];
            list.Add((hit.Doc, score));
        }
        return FixedHits.ByLeaf(byLeaf);
    }

    public override string ToString(string field) => $"vector.search({search.Field}, k={search.K})";

    public override bool Equals(object? obj) => ReferenceEquals(this, obj);

    public override int GetHashCode() => System.Runtime.CompilerServices.RuntimeHelpers.GetHashCode(this);
}
