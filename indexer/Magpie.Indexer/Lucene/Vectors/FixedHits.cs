using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Query = Lucene.Net.Search.Query;

namespace Magpie.Indexer.Lucene.Vectors;

/// <summary>
/// Queries whose hits and scores are decided before the search walks the segments (the nearest vectors, the fused ranks of a hybrid
/// query): a weight over per-segment lists of documents with their scores, and the scorer that walks one.
/// </summary>
internal static class FixedHits
{
    /// <summary>Hits grouped by segment (leaf ordinal), each segment's in document order as scorers walk them.</summary>
    public static Dictionary<int, (int[] Docs, float[] Scores)> ByLeaf(Dictionary<int, List<(int Doc, float Score)>> hits) =>
        hits.ToDictionary(l => l.Key, l =>
        {
            var ordered = l.Value.OrderBy(h => h.Doc).ToList();
            return (ordered.Select(h => h.Doc).ToArray(), ordered.Select(h => h.Score).ToArray());
        });

    /// <param name="explain">A hit's explanation from its score (null: not a hit).</param>
    public sealed class HitsWeight(Query query, Dictionary<int, (int[] Docs, float[] Scores)> found, Func<int, float?, Explanation> explain) : Weight
    {
        public override Query Query => query;

        public override Explanation Explain(AtomicReaderContext context, int doc) =>
            explain(doc, found.TryGetValue(context.Ord, out var hits) && Array.BinarySearch(hits.Docs, doc) is >= 0 and var i ? hits.Scores[i] : null);

        public override float GetValueForNormalization() => 1f;

        public override void Normalize(float norm, float topLevelBoost) { }

        public override Scorer? GetScorer(AtomicReaderContext context, IBits acceptDocs) =>
            found.TryGetValue(context.Ord, out var hits) ? new ListScorer(this, hits.Docs, hits.Scores) : null;
    }

    private sealed class ListScorer(Weight weight, int[] docs, float[] scores) : Scorer(weight)
    {
        private int _at = -1;

        public override int DocID => _at < 0 ? -1 : _at >= docs.Length ? NO_MORE_DOCS : docs[_at];

        public override int NextDoc()
        {
            _at++;
            return DocID;
        }

        public override int Advance(int target)
        {
            do _at++; while (_at < docs.Length && docs[_at] < target);
            return DocID;
        }

        public override float GetScore() => scores[_at];

        public override int Freq => 1;

        public override long GetCost() => docs.Length;
    }
}

/// <summary>
/// Entries by id, each scored as given (<see cref="ScoredIdsQuery"/>: a hybrid query's fused ranks, decided by the query coordinator
/// over every shard); ids the index does not hold are left out.
/// </summary>
internal sealed class ScoredIds(ScoredIdsQuery ids) : Query
{
    public override Weight CreateWeight(IndexSearcher searcher)
    {
        var byLeaf = new Dictionary<int, List<(int Doc, float Score)>>();
        var term = new BytesRef();
        foreach (var leaf in searcher.IndexReader.Leaves)
        {
            if (leaf.AtomicReader.GetTerms(EntryFields.Id) is not { } terms) continue;
            var e = terms.GetEnumerator();
            var live = leaf.AtomicReader.LiveDocs;
            DocsEnum? docs = null;
            foreach (var (id, score) in ids.Scores)
            {
                term.CopyChars(id);
                if (!e.SeekExact(term)) continue;
                docs = e.Docs(live, docs, DocsFlags.NONE);
                for (var doc = docs.NextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = docs.NextDoc())
                {
                    if (!byLeaf.TryGetValue(leaf.Ord, out var list)) byLeaf[leaf.Ord] = list = [];
                    list.Add((doc, score));
                }
            }
        }
        return new FixedHits.HitsWeight(this, FixedHits.ByLeaf(byLeaf), (_, score) => score is { } s
            ? new Explanation(s, "reciprocal rank fusion of the query's rankings") : new Explanation(0, "in neither ranking"));
    }

    public override string ToString(string field) => $"scoredIds({ids.Scores.Count})";

    public override bool Equals(object? obj) => ReferenceEquals(this, obj);

    public override int GetHashCode() => System.Runtime.CompilerServices.RuntimeHelpers.GetHashCode(this);
}
