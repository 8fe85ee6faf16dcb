using Lucene.Net.QueryParsers.Classic;
using Magpie.Contracts.Search;
using Analyzer = Lucene.Net.Analysis.Analyzer;
using Query = Lucene.Net.Search.Query;

namespace Magpie.Indexer.Lucene.Text;

/// <summary>
/// <c>lucene(Field, '…')</c>: Lucene's classic query syntax, the field as its default, the index's analyzer for its words.
/// Its leading wildcards stay off (as Lucene ships it) and its clause limit on; a text it can't parse is refused with
/// the parser's reason.
/// </summary>
internal static class LuceneSyntax
{
    public const int MaxChars = 4096;

    public static Query Parse(LuceneSyntaxQuery q, Analyzer analyzer)
    {
        if (q.Text.Length > MaxChars) throw new IndexEngineException($"lucene() text is longer than {MaxChars:N0} characters");
        var parser = new CompleteFuzzyParser(q.Field, analyzer) { AllowLeadingWildcard = false };
        try { return parser.Parse(q.Text); }
        catch (ParseException e) { throw new IndexEngineException($"lucene() text does not parse: {FirstLine(e.Message)}"); }
    }

    private static string FirstLine(string s) => s.Split('\n')[0].Trim();

    /// <summary>The classic parser whose <c>term~</c> matches every term within the edits (<see cref="SearchSyntax.Fuzzy"/>), not the closest 50.</summary>
    private sealed class CompleteFuzzyParser(string field, Analyzer analyzer) : QueryParser(TextAnalyzer.Version, field, analyzer)
    {
        protected override Query NewFuzzyQuery(global::Lucene.Net.Index.Term term, float minimumSimilarity, int prefixLength) =>
            SearchSyntax.Fuzzy(term, minimumSimilarity >= 1 ? Math.Min((int)minimumSimilarity, SearchSyntax.LevenshteinMaxEdits) : SearchSyntax.SimilarityToEdits(minimumSimilarity, term.Text));
    }
}
