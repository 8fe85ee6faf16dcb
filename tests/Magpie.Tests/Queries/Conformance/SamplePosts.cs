using System.Globalization;
using System.Xml.Linq;
using Lucene.Net.Analysis;
using Lucene.Net.Analysis.Standard;
using Lucene.Net.Analysis.TokenAttributes;
using Lucene.Net.Analysis.Util;
using Lucene.Net.Util;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Queries.Conformance;

/// <summary>
/// The Stack Exchange sample's posts read with LINQ to XML, their titles and bodies tokenized by Lucene's own
/// <c>StandardAnalyzer</c> (no stop words: the analyzer Magpie mirrors), for expected answers computed without Magpie.
/// </summary>
public sealed record SamplePost(string Id, int Type, string? Title, string Body, string[] Tags, double Score, int? Owner, string Created,
    IReadOnlyList<string> TitleTokens, IReadOnlyList<string> BodyTokens)
{
    public static List<SamplePost> Load()
    {
        using var analyzer = new StandardAnalyzer(LuceneVersion.LUCENE_48, CharArraySet.Empty);
        return XDocument.Load(Path.Combine(RepoPaths.StackExchangeSample, "Posts.xml")).Root!.Elements("row").Select(r =>
        {
            var title = (string?)r.Attribute("Title");
            var body = (string?)r.Attribute("Body") ?? "";
            return new SamplePost("posts/" + (string)r.Attribute("Id")!, (int)r.Attribute("PostTypeId")!, title, body,
                ((string?)r.Attribute("Tags") ?? "").Trim('<', '>').Split("><", StringSplitOptions.RemoveEmptyEntries),
                (double)r.Attribute("Score")!, (int?)r.Attribute("OwnerUserId"), (string)r.Attribute("CreationDate")!,
                title is null ? [] : Tokens(analyzer, title), Tokens(analyzer, body));
        }).ToList();
    }

    private static List<string> Tokens(Analyzer analyzer, string text)
    {
        var tokens = new List<string>();
        using var stream = analyzer.GetTokenStream("f", text);
        var term = stream.AddAttribute<ICharTermAttribute>();
        stream.Reset();
        while (stream.IncrementToken()) tokens.Add(term.ToString());
        stream.End();
        return tokens;
    }

    public DateTime CreatedAt => DateTime.Parse(Created, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal);
}

/// <summary>What the queries' text operators mean, computed over token lists.</summary>
public static class Tokens
{
    public static bool Has(IReadOnlyList<string> t, string word) => t.Contains(word);

    public static bool Prefix(IReadOnlyList<string> t, string prefix) => t.Any(w => w.StartsWith(prefix, StringComparison.Ordinal));

    public static bool Suffix(IReadOnlyList<string> t, string suffix) => t.Any(w => w.EndsWith(suffix, StringComparison.Ordinal));

    public static bool Phrase(IReadOnlyList<string> t, params string[] words) =>
        Enumerable.Range(0, Math.Max(0, t.Count - words.Length + 1)).Any(i => words.Select((w, k) => t[i + k] == w).All(x => x));

    /// <summary>Two words within <paramref name="slop"/> of being adjacent in order (Lucene's sloppy phrase: |pb − pa − 1| ≤ slop).</summary>
    public static bool Near(IReadOnlyList<string> t, string a, string b, int slop)
    {
        var pa = t.Select((w, i) => (w, i)).Where(x => x.w == a).Select(x => x.i).ToList();
        var pb = t.Select((w, i) => (w, i)).Where(x => x.w == b).Select(x => x.i).ToList();
        return pa.Any(x => pb.Any(y => Math.Abs(y - x - 1) <= slop));
    }

    public static bool Fuzzy(IReadOnlyList<string> t, string word, int edits) => t.Any(w => Distance(w, word) <= edits);

    /// <summary>Edits between two strings, a swap of neighbours counting one (optimal string alignment, as Lucene's automata count).</summary>
    public static int Distance(string a, string b)
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
}
