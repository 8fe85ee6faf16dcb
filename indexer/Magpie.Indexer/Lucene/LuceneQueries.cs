using Lucene.Net.Analysis.TokenAttributes;
using Lucene.Net.Index;
using Lucene.Net.Queries;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Search;
using Magpie.Indexer.Lucene.Text;
using Magpie.Indexer.Lucene.Vectors;
using Analyzer = Lucene.Net.Analysis.Analyzer;
using BoolQuery = Magpie.Contracts.Search.BoolQuery;
using Query = Lucene.Net.Search.Query;
using SortField = Lucene.Net.Search.SortField;

namespace Magpie.Indexer.Lucene;

/// <summary>Magpie's <see cref="SearchQuery"/> and sort keys as Lucene.Net queries and sorts.</summary>
internal static class LuceneQueries
{
    /// <param name="scored">Whether hits are ordered by score: if not, full text matches its terms without scoring them (4.8's
    /// disjunctions score every hit eagerly: a two-word search over a million posts took 4 s scored, against 0.2 s for Lucene 8).</param>
    /// <param name="vectors">The index's vector columns (<c>vector.search</c> runs on an index, not on one document's filter).</param>
    public static Query Build(SearchQuery query, Analyzer analyzer, bool scored = true, Vectors.VectorColumns? vectors = null) => query switch
    {
        Contracts.Search.TermQuery t => new global::Lucene.Net.Search.TermQuery(new Term(t.Field, t.Value)),
        LongRangeQuery r => NumericRangeQuery.NewInt64Range(r.Field, LuceneDocuments.PrecisionStep, r.Lower, r.Upper, true, true),
        // Bounds of -0 are 0, as the index holds every zero (LuceneDocuments).
        DoubleRangeQuery r => NumericRangeQuery.NewDoubleRange(r.Field, LuceneDocuments.PrecisionStep, r.Lower == 0 ? 0d : r.Lower, r.Upper == 0 ? 0d : r.Upper, true, true),
        Contracts.Search.TermRangeQuery r => global::Lucene.Net.Search.TermRangeQuery.NewStringRange(r.Field, r.Lower, r.Upper, r.IncludeLower, r.IncludeUpper),
        Contracts.Search.PrefixQuery p => new global::Lucene.Net.Search.PrefixQuery(new Term(p.Field, p.Prefix)),
        IdQuery i => IdMatching(i),
        FullTextQuery f => SearchSyntax.Build(f, analyzer, scored),
        Contracts.Search.FuzzyQuery f => SearchSyntax.Fuzzy(new Term(f.Field, f.Term), SearchSyntax.FuzzyEdits(f.Fuzziness, f.Term)),
        Contracts.Search.WildcardQuery w => w.Pattern.Length <= SearchSyntax.MaxPatternChars ? new global::Lucene.Net.Search.WildcardQuery(new Term(w.Field, w.Pattern))
            : throw new IndexEngineException($"a pattern is longer than {SearchSyntax.MaxPatternChars} characters"),
        RegexQuery r => new RegexTermsQuery(r.Field, r.Pattern),
        LuceneSyntaxQuery l => LuceneSyntax.Parse(l, analyzer),
        MoreLikeThisQuery m => new Text.MoreLikeThis(m, analyzer),
        ScoredIdsQuery s => new ScoredIds(s),
        BoostQuery b => Boosted(Build(b.Inner, analyzer, scored, vectors), b.Factor),
        VectorSearchQuery v => new Vectors.NearestVectors(v, ReferenceEquals(v.Filter, SearchQuery.All) ? null : Build(v.Filter, analyzer, scored: false, vectors),
            vectors ?? throw new IndexEngineException("vector.search runs on an index (a subscription's condition cannot hold one)")),
        ExistsQuery e => new global::Lucene.Net.Search.TermQuery(new Term(LuceneDocuments.Exists, e.Field)),
        TermsQuery t when t.Values.Count == 0 => new BooleanQuery(),
        TermsQuery t => new ConstantScoreQuery(new TermsFilter(t.Field, t.Values.Select(v => new BytesRef(v)).ToList())),
        BoolQuery b => Bool(b, analyzer, scored, vectors),
        _ when ReferenceEquals(query, SearchQuery.All) => new MatchAllDocsQuery(),
        _ => throw new ArgumentException($"unknown query node {query.GetType().Name}"),
    };

    /// <summary>
    /// Ids are kept as written and compared case-insensitively: an automaton over the id terms taking each character in any case
    /// (an id of the store is unique whatever its case, so an equality matches one entry per document at most).
    /// </summary>
    private static Query IdMatching(IdQuery i)
    {
        // No id is longer than 512 UTF-8 bytes, so a longer value matches nothing (and bounds the automaton).
        if (System.Text.Encoding.UTF8.GetByteCount(i.Value) > Contracts.Documents.DocumentId.MaxUtf8Bytes) return new BooleanQuery();
        var parts = new List<global::Lucene.Net.Util.Automaton.Automaton>();
        if (i.Match == IdMatch.Suffix) parts.Add(global::Lucene.Net.Util.Automaton.BasicAutomata.MakeAnyString());
        foreach (var rune in i.Value.EnumerateRunes())
        {
            var any = new[] { rune, System.Text.Rune.ToLowerInvariant(rune), System.Text.Rune.ToUpperInvariant(rune) }.Distinct()
                .Select(r => global::Lucene.Net.Util.Automaton.BasicAutomata.MakeChar(r.Value)).ToList();
            parts.Add(any.Count == 1 ? any[0] : global::Lucene.Net.Util.Automaton.BasicOperations.Union(any));
        }
        if (i.Match == IdMatch.Prefix) parts.Add(global::Lucene.Net.Util.Automaton.BasicAutomata.MakeAnyString());
        return new AutomatonQuery(new Term(LuceneDocuments.Id), global::Lucene.Net.Util.Automaton.BasicOperations.Concatenate(parts));
    }

    private static BooleanQuery Bool(BoolQuery b, Analyzer analyzer, bool scored, Vectors.VectorColumns? vectors)
    {
        var q = new BooleanQuery();
        var must = 0;
        foreach (var m in b.Must)
        {
            // "a and not x", unscored: x excluded here, not a nested "everything but x" intersected with a. That nesting walked
            // every document of the index beside a's matches (a third of a SQL aggregate whose WHERE matched all 1M posts).
            // Scored queries keep the nesting: its match-all clause adds to every score, and dropping it could reorder hits.
            if (!scored && m is BoolQuery { Must.Count: 0, Should.Count: 0 } negation)
            {
                foreach (var n in negation.MustNot) q.Add(Build(n, analyzer, scored, vectors), Occur.MUST_NOT);
                continue;
            }
            q.Add(Build(m, analyzer, scored, vectors), Occur.MUST);
            must++;
        }
        foreach (var s in b.Should) q.Add(Build(s, analyzer, scored, vectors), Occur.SHOULD);
        foreach (var n in b.MustNot) q.Add(Build(n, analyzer, scored, vectors), Occur.MUST_NOT);
        if (must == 0 && b.Should.Count == 0) q.Add(new MatchAllDocsQuery(), Occur.MUST);
        if (must > 0 && b.Should.Count > 0) q.MinimumNumberShouldMatch = 1;
        return q;
    }

    /// <summary>The query with its score multiplied (a copy: built queries may be shared).</summary>
    private static Query Boosted(Query inner, float factor)
    {
        var q = (Query)inner.Clone();
        q.Boost *= factor;
        return q;
    }
}
