using Lucene.Net.Analysis;
using Lucene.Net.Analysis.Standard;
using Lucene.Net.Analysis.TokenAttributes;
using Lucene.Net.Analysis.Util;
using Lucene.Net.Util;
using Magpie.Indexer.Lucene;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Indexing;

/// <summary>
/// The engine's analyzer must cut and lower-case text exactly as 4.8's StandardAnalyzer without stop words did: an index built
/// before it and the queries after it meet on the same terms, and <c>search()</c> finds what it found.
/// </summary>
[Trait("Category", "Fast")]
public class TextAnalyzerTests
{
    [Fact]
    public void Stack_exchange_posts_give_the_standard_analyzers_tokens()
    {
        var posts = new Producers.StackExchangeXml(RepoPaths.StackExchangeSample).Posts;
        var texts = posts.SelectMany(p => new[] { (string?)p.Attribute("Title"), (string?)p.Attribute("Body") }).OfType<string>().ToList();
        Assert.True(texts.Count > 100, $"{texts.Count} texts");
        AssertSameTokens(texts);
    }

    [Fact]
    public void Text_beyond_ascii_gives_the_standard_analyzers_tokens()
    {
        string[] pieces =
        [
            "Hello", "WORLD", "İstanbul", "ISTANBUL", "Straße", "ΣΊΣΥΦΟΣ", "Ǆemal", "𐐀𐐁 Deseret", "Ｆｕｌｌｗｉｄｔｈ", "naïve CAFÉ",
            "日本語のテキスト", "x1-Y2_z3", "e-mail@Example.COM", "3.14", "don't", "U.S.A.", "\u00C5ngström", "ǅ", "ﬃ", "K", new string('A', 300),
        ];
        var random = new Random(27);
        var texts = Enumerable.Range(0, 2_000)
            .Select(_ => string.Join(random.Next(3) == 0 ? ", " : " ", Enumerable.Range(0, random.Next(1, 8)).Select(_ => pieces[random.Next(pieces.Length)])))
            .ToList();
        AssertSameTokens(texts);
    }

    private static void AssertSameTokens(IEnumerable<string> texts)
    {
        using var standard = new StandardAnalyzer(LuceneVersion.LUCENE_48, CharArraySet.Empty);
        using var engine = new LuceneEngine(Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
        var ours = engine.Analyzer;
        foreach (var text in texts)
            Assert.Equal(Tokens(standard, text), Tokens(ours, text));
    }

    /// <summary>Each token as term, offsets, position increment and type.</summary>
    private static List<string> Tokens(Analyzer analyzer, string text)
    {
        var tokens = new List<string>();
        using var stream = analyzer.GetTokenStream("Body", text);
        var term = stream.AddAttribute<ICharTermAttribute>();
        var offset = stream.AddAttribute<IOffsetAttribute>();
        var position = stream.AddAttribute<IPositionIncrementAttribute>();
        var type = stream.AddAttribute<ITypeAttribute>();
        stream.Reset();
        while (stream.IncrementToken())
            tokens.Add($"{term} {offset.StartOffset}-{offset.EndOffset} +{position.PositionIncrement} {type.Type}");
        stream.End();
        tokens.Add($"end {offset.EndOffset} +{position.PositionIncrement}");
        return tokens;
    }
}
