using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Search;

namespace Magpie.Indexer.Lucene.Text;

/// <summary>
/// <c>suggest()</c> as Lucene's <c>DirectSpellChecker</c> does it (its Suggest module is not in the package mirror): the candidates
/// are the field's terms within two edits of the word, found by intersecting each segment's terms dictionary with a Levenshtein
/// automaton (core's <see cref="FuzzyTermsEnum"/>, transpositions one edit), so nothing beside the index is built or kept; each is
/// then scored by the distance asked and kept above the accuracy.
/// </summary>
internal static class Suggestions
{
    public static IReadOnlyList<TermSuggestion> Of(IndexReader reader, SuggestSpec spec)
    {
        var entries = new Dictionary<string, long>(StringComparer.Ordinal);
        var word = new Term(spec.Field, spec.Term);
        foreach (var leaf in reader.Leaves)
        {
            if (leaf.AtomicReader.GetTerms(spec.Field) is not { } terms) continue;
            var candidates = new FuzzyTermsEnum(terms, new AttributeSource(), word, spec.MaxEdits, prefixLength: 0, transpositions: true);
            while (candidates.MoveNext())
            {
                var term = candidates.Term.Utf8ToString();
                if (term != spec.Term) entries[term] = entries.GetValueOrDefault(term) + candidates.DocFreq;
            }
        }
        return entries.Select(e => new TermSuggestion(e.Key, e.Value, Similarity(spec.Distance, spec.Term, e.Key)))
            .Where(s => s.Similarity >= spec.Accuracy)
            .OrderByDescending(s => s.Similarity).ThenByDescending(s => s.Entries).ThenBy(s => s.Term, StringComparer.Ordinal)
            .Take(SuggestSpec.MaxCandidates).ToList();
    }

    public static float Similarity(SuggestDistance distance, string a, string b) => distance switch
    {
        SuggestDistance.JaroWinkler => JaroWinkler(a, b),
        _ => 1f - (float)Edits(a, b) / Math.Max(a.Length, b.Length),
    };

    /// <summary>Edits between two words: insertions, deletions, substitutions and transpositions of neighbours (optimal string alignment).</summary>
    public static int Edits(string a, string b)
    {
        var d = new int[a.Length + 1, b.Length + 1];
        for (var i = 0; i <= a.Length; i++) d[i, 0] = i;
        for (var j = 0; j <= b.Length; j++) d[0, j] = j;
        for (var i = 1; i <= a.Length; i++)
            for (var j = 1; j <= b.Length; j++)
            {
                var cost = a[i - 1] == b[j - 1] ? 0 : 1;
                d[i, j] = Math.Min(Math.Min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + cost);
                if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i, j] = Math.Min(d[i, j], d[i - 2, j - 2] + 1);
            }
        return d[a.Length, b.Length];
    }

    /// <summary>Jaro–Winkler similarity (a shared prefix of up to 4 characters counts extra), as Lucene's <c>JaroWinklerDistance</c> gives it.</summary>
    public static float JaroWinkler(string a, string b)
    {
        if (a.Length == 0 || b.Length == 0) return a.Length == b.Length ? 1 : 0;
        var window = Math.Max(0, Math.Max(a.Length, b.Length) / 2 - 1);
        var aMatched = new bool[a.Length];
        var bMatched = new bool[b.Length];
        var matches = 0;
        for (var i = 0; i < a.Length; i++)
            for (int j = Math.Max(0, i - window), end = Math.Min(b.Length, i + window + 1); j < end; j++)
                if (!bMatched[j] && a[i] == b[j]) { aMatched[i] = bMatched[j] = true; matches++; break; }
        if (matches == 0) return 0;
        var transposed = 0;
        for (int i = 0, j = 0; i < a.Length; i++)
        {
            if (!aMatched[i]) continue;
            while (!bMatched[j]) j++;
            if (a[i] != b[j]) transposed++;
            j++;
        }
        var m = (double)matches;
        var jaro = (m / a.Length + m / b.Length + (m - transposed / 2.0) / m) / 3;
        var prefix = 0;
        while (prefix < Math.Min(4, Math.Min(a.Length, b.Length)) && a[prefix] == b[prefix]) prefix++;
        return (float)(jaro + prefix * 0.1 * (1 - jaro));
    }
}
