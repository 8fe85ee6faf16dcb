using Lucene.Net.Analysis;
using Lucene.Net.Analysis.TokenAttributes;
using Lucene.Net.Search.Highlight;
using Magpie.Contracts.Search;
using Query = Lucene.Net.Search.Query;

namespace Magpie.Indexer.Lucene.Text;

/// <summary>
/// <c>include highlight(…)</c> through Lucene.Net.Highlighter's <see cref="Highlighter"/>, not the FastVectorHighlighter: the plain one
/// re-analyzes the stored text with the field's analyzer, so it needs no term vectors in the index (the fast one needs positions and
/// offsets stored for every highlighted field, a larger index and a rebuild to turn on), and its <see cref="QueryScorer"/> matches
/// phrases by their spans and expands wildcards, prefixes and fuzzy words against the text itself (a one-document memory index).
/// Per page of 25 hits the cost is the analysis of their text, which a page of results reads anyway.
/// </summary>
internal static class Highlights
{
    public static IReadOnlyList<string> Of(Query query, HighlightSpec spec, IReadOnlyList<string> texts, Analyzer analyzer)
    {
        var scored = new List<(float Score, string Text)>();
        foreach (var text in texts)
        {
            if (string.IsNullOrEmpty(text)) continue;
            var scorer = new QueryScorer(query, spec.Field) { ExpandMultiTermQuery = true };
            var highlighter = new Highlighter(new CyclingTags(spec.PreTags, spec.PostTags), new SimpleHTMLEncoder(), scorer)
            {
                TextFragmenter = new BoundedFragmenter(scorer, spec.FragmentLength),
                MaxDocCharsToAnalyze = HighlightSpec.MaxTextChars,
            };
            using var tokens = analyzer.GetTokenStream(spec.Field, text);
            TextFragment[] fragments;
            try { fragments = highlighter.GetBestTextFragments(tokens, text, mergeContiguousFragments: false, spec.FragmentCount); }
            catch (InvalidTokenOffsetsException e) { throw new IndexEngineException($"the text of '{spec.Field}' could not be highlighted: {e.Message}", e); }
            foreach (var fragment in fragments)
                if (fragment is { Score: > 0 }) scored.Add((fragment.Score, fragment.ToString()));
        }
        return scored.OrderByDescending(f => f.Score).Take(spec.FragmentCount).Select(f => f.Text).ToList();
    }

    /// <summary>RavenDB's marks: the first distinct word matched gets the first tags, the next the second, and round again.</summary>
    private sealed class CyclingTags(IReadOnlyList<string> pre, IReadOnlyList<string> post) : IFormatter
    {
        private readonly Dictionary<string, int> _words = new(StringComparer.OrdinalIgnoreCase);

        public string HighlightTerm(string originalText, TokenGroup tokenGroup)
        {
            if (tokenGroup.TotalScore <= 0) return originalText;
            if (!_words.TryGetValue(originalText, out var n)) _words[originalText] = n = _words.Count;
            return pre[n % pre.Count] + originalText + post[n % post.Count];
        }
    }

    /// <summary>
    /// Fragments of at most the length asked, counted from their first word (Lucene's <see cref="SimpleSpanFragmenter"/> cuts at
    /// multiples of the length from the text's start, so a fragment could run well past it), never cutting a matched phrase.
    /// </summary>
    private sealed class BoundedFragmenter(QueryScorer scorer, int length) : IFragmenter
    {
        private IOffsetAttribute _offset = null!;
        private IPositionIncrementAttribute _increment = null!;
        private ICharTermAttribute _term = null!;
        private int _position, _phraseEnd, _start;

        public void Start(string originalText, TokenStream tokenStream)
        {
            // The highlighter asks from the second token on (the first always opens the first fragment): that one is at position 1.
            (_position, _phraseEnd, _start) = (0, -1, 0);
            _offset = tokenStream.AddAttribute<IOffsetAttribute>();
            _increment = tokenStream.AddAttribute<IPositionIncrementAttribute>();
            _term = tokenStream.AddAttribute<ICharTermAttribute>();
        }

        public bool IsNewFragment()
        {
            _position += _increment.PositionIncrement;
            if (_position <= _phraseEnd) return false;   // inside a matched phrase: its words stay together
            if (scorer.GetWeightedSpanTerm(_term.ToString()) is { } span && span.CheckPosition(_position) && span.IsPositionSensitive)
                foreach (var phrase in span.PositionSpans)
                    if (phrase.Start == _position) _phraseEnd = Math.Max(_phraseEnd, phrase.End);
            if (_offset.EndOffset - _start <= length) return false;
            _start = _offset.StartOffset;
            return true;
        }
    }
}
