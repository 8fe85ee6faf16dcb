using Lucene.Net.Index;
using Lucene.Net.Search;
using Magpie.Contracts.Search;
using Analyzer = Lucene.Net.Analysis.Analyzer;
using Query = Lucene.Net.Search.Query;

namespace Magpie.Indexer.Lucene.Text;

/// <summary>
/// <c>moreLikeThis</c> through Lucene.Net.Queries' <see cref="global::Lucene.Net.Queries.Mlt.MoreLikeThis"/>: rewritten against the
/// index it searches (a shard's own word frequencies, as an Elasticsearch shard does), each field's text searched on that field,
/// the fields' queries added up. A document without text for any field matches nothing.
/// </summary>
internal sealed class MoreLikeThis(MoreLikeThisQuery like, Analyzer analyzer) : Query
{
    public override Query Rewrite(IndexReader reader)
    {
        var any = new BooleanQuery();
        foreach (var (field, texts) in like.Texts)
        {
            var text = string.Join("\n", texts);
            if (text.Length == 0) continue;
            var o = like.Options;
            var mlt = new global::Lucene.Net.Queries.Mlt.MoreLikeThis(reader)
            {
                Analyzer = analyzer, FieldNames = [field], MinTermFreq = o.MinimumTermFrequency, MinDocFreq = o.MinimumDocumentFrequency,
                MaxDocFreq = o.MaximumDocumentFrequency, MaxQueryTerms = o.MaximumQueryTerms, MinWordLen = o.MinimumWordLength,
                MaxWordLen = o.MaximumWordLength, MaxNumTokensParsed = o.MaximumNumberOfTokensParsed, ApplyBoost = o.Boost, BoostFactor = o.BoostFactor,
            };
            var query = mlt.Like(new StringReader(text), field);
            if (query is BooleanQuery { Clauses.Count: 0 }) continue;
            any.Add(query, Occur.SHOULD);
        }
        any.Boost = Boost;
        return any;
    }

    public override string ToString(string field) => $"moreLikeThis({string.Join(", ", like.Texts.Keys)})";

    public override bool Equals(object? obj) => obj is MoreLikeThis other && ReferenceEquals(other.Like, Like) && other.Boost == Boost;

    public override int GetHashCode() => System.Runtime.CompilerServices.RuntimeHelpers.GetHashCode(Like) ^ Boost.GetHashCode();

    private MoreLikeThisQuery Like => like;
}
