using Lucene.Net.Analysis.TokenAttributes;
using Lucene.Net.Index;
using Lucene.Net.Queries;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Search;
using Analyzer = Lucene.Net.Analysis.Analyzer;
using Query = Lucene.Net.Search.Query;

namespace Magpie.Indexer.Lucene.Text;

/// <summary>
/// RavenDB's <c>search()</c> text as Lucene queries. Words are analyzed like the field (each token a term); <c>"a phrase"</c>
/// matches its tokens in order; <c>espress*</c> is a prefix, <c>*presso</c> / <c>es?resso</c> a wildcard (lower-cased, not
/// analyzed); <c>espreso~</c> (<c>~1</c>, <c>~0.8</c>) is fuzzy; <c>-word</c> excludes. Any clause matches, or every one with
/// <see cref="FullTextQuery.AllWords"/>. <see cref="FullTextQuery.Proximity"/> makes the words one sloppy phrase. What the
/// syntax can't say (an unclosed quote, a proximity over a wildcard, too many words) is refused, never dropped.
/// </summary>
internal static class SearchSyntax
{
    /// <summary>Most clauses one search() text may hold.</summary>
    public const int MaxClauses = 256;

    /// <summary>Longest wildcard or fuzzy pattern (a leading <c>*</c> walks the field's terms; a pattern's automaton grows with its length).</summary>
    public const int MaxPatternChars = 255;

    public static Query Build(FullTextQuery f, Analyzer analyzer, bool scored)
    {
        var clauses = Parse(f.Text);
        if (f.Proximity is { } slop) return Proximity(f, clauses, analyzer, slop);

        var positive = new List<Query>();
        var negative = new List<Query>();
        var plainTerms = new List<string>();   // the positive clauses that are single terms, for the unscored fast path
        var onlyTerms = true;
        foreach (var c in clauses)
        {
            var queries = Queries(f.Field, c, analyzer);
            if (c.Excluded) { negative.AddRange(queries); continue; }
            positive.AddRange(queries);
            foreach (var q in queries)
                if (q is global::Lucene.Net.Search.TermQuery t) plainTerms.Add(t.Term.Text);
                else onlyTerms = false;
        }
        if (positive.Count == 0 && negative.Count == 0) return new BooleanQuery();   // no words: nothing matches
        // Any of the terms, unscored: one filter over their postings (4.8's disjunction scores every hit eagerly).
        if (!scored && !f.AllWords && onlyTerms && negative.Count == 0)
            return new ConstantScoreQuery(new TermsFilter(f.Field, plainTerms.Select(t => new BytesRef(t)).ToList()));
        var query = new BooleanQuery();
        foreach (var q in positive) query.Add(q, f.AllWords ? Occur.MUST : Occur.SHOULD);
        foreach (var q in negative) query.Add(q, Occur.MUST_NOT);
        if (positive.Count == 0) query.Add(new MatchAllDocsQuery(), Occur.MUST);   // only exclusions: everything else
        return query;
    }

    /// <summary>One clause's queries: a word may analyze into several terms (each one a clause of its own), a phrase is one query.</summary>
    private static List<Query> Queries(string field, SearchClause c, Analyzer analyzer)
    {
        switch (c.Kind)
        {
            case ClauseKind.Prefix:
                return [new global::Lucene.Net.Search.PrefixQuery(new Term(field, c.Text[..^1]))];
            case ClauseKind.Wildcard:
                return [new global::Lucene.Net.Search.WildcardQuery(new Term(field, c.Text))];
            case ClauseKind.Fuzzy:
                return [Fuzzy(new Term(field, c.Text), c.MaxEdits)];
            case ClauseKind.Phrase:
                var tokens = Tokens(analyzer, field, c.Text);
                if (tokens.Count == 0) return [];
                if (tokens.Count == 1) return [new global::Lucene.Net.Search.TermQuery(new Term(field, tokens[0].Term))];
                var phrase = new PhraseQuery();
                foreach (var (term, position) in tokens) phrase.Add(new Term(field, term), position);
                return [phrase];
            default:
                return Tokens(analyzer, field, c.Text).Select(t => (Query)new global::Lucene.Net.Search.TermQuery(new Term(field, t.Term))).ToList();
        }
    }

    /// <summary><c>proximity(search(F, 'a b c'), n)</c>: the words within n positions of each other, in any order (a sloppy phrase).</summary>
    private static Query Proximity(FullTextQuery f, List<SearchClause> clauses, Analyzer analyzer, int slop)
    {
        if (clauses.FirstOrDefault(c => c.Kind != ClauseKind.Word || c.Excluded) is { } other)
            throw new IndexEngineException($"proximity() takes plain words: '{other.Written}' is a {other.Describe()}");
        var tokens = Tokens(analyzer, f.Field, string.Join(' ', clauses.Select(c => c.Text)));
        if (tokens.Count < 2) throw new IndexEngineException($"proximity() needs at least two words to measure between, not '{f.Text}'");
        var phrase = new PhraseQuery { Slop = slop };
        foreach (var (term, position) in tokens) phrase.Add(new Term(f.Field, term), position);
        return phrase;
    }

    private static List<(string Term, int Position)> Tokens(Analyzer analyzer, string field, string text)
    {
        var tokens = new List<(string, int)>();
        using var stream = analyzer.GetTokenStream(field, text);
        var term = stream.AddAttribute<ICharTermAttribute>();
        var increment = stream.AddAttribute<IPositionIncrementAttribute>();
        stream.Reset();
        var position = -1;
        while (stream.IncrementToken())
        {
            position += increment.PositionIncrement;
            tokens.Add((term.ToString(), position));
        }
        stream.End();
        return tokens;
    }

    public static List<SearchClause> Parse(string text)
    {
        var clauses = new List<SearchClause>();
        var i = 0;
        while (i < text.Length)
        {
            if (char.IsWhiteSpace(text[i])) { i++; continue; }
            var start = i;
            var excluded = text[i] == '-' && i + 1 < text.Length && !char.IsWhiteSpace(text[i + 1]);
            if (excluded) i++;
            SearchClause clause;
            if (text[i] == '"')
            {
                var close = text.IndexOf('"', i + 1);
                if (close < 0) throw new IndexEngineException($"search() text has a quote that is never closed (at character {i + 1})");
                clause = new SearchClause(ClauseKind.Phrase, text[(i + 1)..close], excluded, text[start..(close + 1)]);
                i = close + 1;
            }
            else
            {
                var end = i;
                while (end < text.Length && !char.IsWhiteSpace(text[end])) end++;
                clause = Word(text[i..end], excluded, text[start..end]);
                i = end;
            }
            if (clauses.Count == MaxClauses) throw new IndexEngineException($"search() text has more than {MaxClauses} words and phrases: narrow it");
            clauses.Add(clause);
        }
        return clauses;
    }

    private static SearchClause Word(string word, bool excluded, string written)
    {
        var tilde = word.LastIndexOf('~');
        if (tilde > 0)
        {
            var term = Lower(word[..tilde]);
            var edits = Edits(word[(tilde + 1)..], term, written);
            return new SearchClause(ClauseKind.Fuzzy, Pattern(term, written), excluded, written) { MaxEdits = edits };
        }
        if (word.AsSpan().IndexOfAny('*', '?') < 0) return new SearchClause(ClauseKind.Word, word, excluded, written);
        var pattern = Pattern(Lower(word), written);
        var prefix = pattern.Length > 1 && pattern[^1] == '*' && pattern.AsSpan(0, pattern.Length - 1).IndexOfAny('*', '?') < 0;
        return new SearchClause(prefix ? ClauseKind.Prefix : ClauseKind.Wildcard, pattern, excluded, written);
    }

    /// <summary>
    /// Every term within the edits, scored: Lucene's default keeps the 50 closest terms and drops the rest, an answer short of
    /// matches with no error. Past the clause limit (1,024 terms) the query is refused, with the engine's message.
    /// </summary>
    public static global::Lucene.Net.Search.FuzzyQuery Fuzzy(Term term, int maxEdits) =>
        new(term, maxEdits) { MultiTermRewriteMethod = MultiTermQuery.SCORING_BOOLEAN_QUERY_REWRITE };

    /// <summary><c>~</c> = 2 edits (Lucene's default), <c>~1</c> = 1, <c>~0.8</c> = a similarity as Lucene 3 and RavenDB read it.</summary>
    private static int Edits(string after, string term, string written)
    {
        if (after.Length == 0) return LevenshteinMaxEdits;
        if (!float.TryParse(after, System.Globalization.NumberStyles.Float, System.Globalization.CultureInfo.InvariantCulture, out var n) || n < 0 || float.IsNaN(n)
            || n >= 1 && n is not (1 or 2))
            throw new IndexEngineException($"search() fuzzy word '{written}': after '~' comes an edit distance (0, 1, 2) or a similarity below 1 (0.8)");
        return FuzzyEdits(n, term);
    }

    /// <summary>The most edits Lucene's Levenshtein automata support.</summary>
    public const int LevenshteinMaxEdits = 2;

    /// <summary>A similarity below 1 as edits over the term's length (Lucene's <c>FuzzyQuery.SingleToEdits</c>); 1 or more as edits, at most 2.</summary>
    public static int FuzzyEdits(float n, string term) => n switch
    {
        < 1 => SimilarityToEdits(n, term),
        1 or 2 => (int)n,
        _ => throw new IndexEngineException($"fuzzy matching of '{term}' takes 1 or 2 edits or a similarity below 1, not {n} (Levenshtein automata stop at 2 edits)"),
    };

    /// <summary>Lucene 3's minimum similarity as edits: (1 − similarity) × the term's length in code points, at most 2; 0 is exact.</summary>
    public static int SimilarityToEdits(float similarity, string term) =>
        similarity <= 0 ? 0 : Math.Min((int)((1d - similarity) * term.EnumerateRunes().Count()), LevenshteinMaxEdits);

    private static string Pattern(string pattern, string written) => pattern.Length <= MaxPatternChars ? pattern
        : throw new IndexEngineException($"search() pattern '{written[..32]}…' is longer than {MaxPatternChars} characters");

    /// <summary>Patterns are not analyzed: lower-cased as the analyzer lower-cases, so they meet the indexed terms.</summary>
    private static string Lower(string s) => s.ToLowerInvariant();
}

internal enum ClauseKind { Word, Phrase, Prefix, Wildcard, Fuzzy }

/// <param name="Written">The clause as the user wrote it (errors quote it).</param>
internal sealed record SearchClause(ClauseKind Kind, string Text, bool Excluded, string Written)
{
    public int MaxEdits { get; init; }

    public string Describe() => Excluded ? "exclusion" : Kind switch
    {
        ClauseKind.Phrase => "quoted phrase", ClauseKind.Prefix or ClauseKind.Wildcard => "wildcard", ClauseKind.Fuzzy => "fuzzy word", _ => "word",
    };
}
