using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Tests.Http;
using Magpie.Tests.Queries.Conformance;

namespace Magpie.Tests.Queries.Search;

/// <summary>
/// Search features checked against the Stack Exchange sample's own text, the same cases embedded and over Kafka indexers:
/// highlighting (fragments of the real bodies, escaped, with the matched words marked).
/// </summary>
public static partial class SearchCases
{
    /// <summary>A static index storing Body (static indexes highlight what they store).</summary>
    public const string StoredIndex = "Posts/StoredText";

    public const string StoredDefinition = """
        { "maps": ["map('Posts', p => ({ Title: p.Title || null, Body: p.Body }))"],
          "fields": { "Body": { "indexing": "search", "store": true }, "Title": { "indexing": "search" } } }
        """;

    private static async Task<JsonElement> PageAsync(HttpClient http, string rql, object? parameters = null)
    {
        var r = await http.PostAsJsonAsync("queries", new { query = rql, pageSize = 1024, waitForNonStaleResults = true, timeoutMs = 60_000, parameters });
        Assert.True(r.IsSuccessStatusCode, $"{rql}\n{await r.Content.ReadAsStringAsync()}");
        return await r.JsonAsync();
    }

    /// <summary>The marked words of a fragment, and the fragment's text without the marks, unescaped as a browser would show it.</summary>
    private static (List<string> Marked, string Text) Read(string fragment, string pre = "<b>", string post = "</b>")
    {
        var marked = Regex.Matches(fragment, Regex.Escape(pre) + "(.*?)" + Regex.Escape(post)).Select(m => WebUtility.HtmlDecode(m.Groups[1].Value)).ToList();
        return (marked, WebUtility.HtmlDecode(fragment.Replace(pre, "").Replace(post, "")));
    }

    /// <summary>Every hit's fragments: at most the count asked, each a piece of the post's own body (escaped: the bodies are HTML), marking what <paramref name="marks"/> accepts.</summary>
    private static void AssertFragments(JsonElement answer, string field, Dictionary<string, SamplePost> posts, int count, int length, Func<string, bool> marks,
        string pre = "<b>", string post = "</b>")
    {
        var results = answer.GetProperty("results").EnumerateArray().ToList();
        Assert.NotEmpty(results);
        var byId = answer.GetProperty("highlightings").GetProperty(field);
        foreach (var r in results)
        {
            var id = r.GetProperty("@metadata").GetProperty("@id").GetString()!;
            var fragments = byId.GetProperty(id).EnumerateArray().Select(f => f.GetString()!).ToList();
            Assert.InRange(fragments.Count, 1, count);
            foreach (var fragment in fragments)
            {
                Assert.DoesNotContain("<p>", fragment);   // the body's own HTML is escaped around the marks
                var (marked, text) = Read(fragment, pre, post);
                Assert.NotEmpty(marked);
                Assert.All(marked, m => Assert.True(marks(m), $"{id}: '{m}' marked in {fragment}"));
                Assert.Contains(text, posts[id].Body);
                Assert.True(text.Length <= length + 40, $"{id}: a fragment of {text.Length} characters for {length} asked");
            }
        }
    }

    public static async Task Highlights_mark_the_matched_words_in_fragments_of_the_text(HttpClient http, List<SamplePost> sample)
    {
        var posts = sample.ToDictionary(p => p.Id);
        const string Auto = "from Posts";
        // A word: every hit's fragments mark it, in the text of the post's body.
        var word = await PageAsync(http, $"{Auto} where search(Body, 'wikipedia') include highlight(Body, 128, 2)");
        Assert.Equal(sample.Count(p => p.BodyTokens.Contains("wikipedia")), word.GetProperty("totalResults").GetInt32());
        AssertFragments(word, "Body", posts, 2, 128, m => m.Equals("wikipedia", StringComparison.OrdinalIgnoreCase));

        // A phrase marks its words only where they stand together; a wildcard and a fuzzy word mark what they match.
        var phrase = await PageAsync(http, $"{Auto} where search(Body, '\"primary sources\"') include highlight(Body, 100, 3)");
        AssertFragments(phrase, "Body", posts, 3, 100, m => m.Equals("primary", StringComparison.OrdinalIgnoreCase) || m.Equals("sources", StringComparison.OrdinalIgnoreCase));
        foreach (var fragments in phrase.GetProperty("highlightings").GetProperty("Body").EnumerateObject())
            foreach (var f in fragments.Value.EnumerateArray())
                Assert.Matches(new Regex("<b>primary</b>(?:[^\\w<]|&\\w+;)+<b>sources</b>", RegexOptions.IgnoreCase), f.GetString()!);
        AssertFragments(await PageAsync(http, $"{Auto} where search(Body, 'wikiped*') include highlight(Body, 128, 1)"), "Body", posts, 1, 128,
            m => m.StartsWith("wikiped", StringComparison.OrdinalIgnoreCase));
        AssertFragments(await PageAsync(http, $"{Auto} where search(Body, 'wikipeda~') include highlight(Body, 128, 1)"), "Body", posts, 1, 128,
            m => m.Length >= 7 && m.StartsWith("wikiped", StringComparison.OrdinalIgnoreCase));

        // Tags of one's own (RavenDB's options), the first word's tags for the first word, the second's for the second.
        var tagged = await PageAsync(http, $"{Auto} where search(Body, 'primary sources', and) include highlight(Body, 128, 2, $tags)",
            new { tags = new { PreTags = new[] { "<em class=\"a\">", "<em class=\"b\">" }, PostTags = new[] { "</em>" } } });
        var any = tagged.GetProperty("highlightings").GetProperty("Body").EnumerateObject().SelectMany(p => p.Value.EnumerateArray()).Select(f => f.GetString()!).ToList();
        Assert.NotEmpty(any);
        Assert.Contains(any, f => f.Contains("<em class=\"a\">") && f.Contains("</em>"));
        Assert.DoesNotContain(any, f => f.Contains("<b>"));

        // A static index highlights what it stores.
        var stored = await PageAsync(http, $"from index '{StoredIndex}' where search(Body, 'wikipedia') include highlight(Body, 128, 2)");
        AssertFragments(stored, "Body", posts, 2, 128, m => m.Equals("wikipedia", StringComparison.OrdinalIgnoreCase));

        // Streams: each result carries its fragments in @metadata.@highlights.
        var r = await http.PostAsJsonAsync("streams/queries", new { query = $"{Auto} where search(Body, 'wikipedia') include highlight(Body, 128, 2)" });
        var lines = (await r.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(l => JsonDocument.Parse(l).RootElement).ToList();
        Assert.Equal(word.GetProperty("totalResults").GetInt32(), lines.Count);
        Assert.All(lines, l => Assert.Contains("<b>", l.GetProperty("@metadata").GetProperty("@highlights").GetProperty("Body")[0].GetString()));
    }

    public static async Task Highlights_out_of_bounds_are_refused(HttpClient http)
    {
        async Task Refused(string rql, string detail, object? parameters = null)
        {
            var r = await http.PostAsJsonAsync("queries", new { query = rql, parameters });
            await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, detail);
        }
        await Refused("from Posts where search(Body, 'x') include highlight(Body, 5, 2)", "fragment length must be a whole number from 18 to 4,096");
        await Refused("from Posts where search(Body, 'x') include highlight(Body, 128, 100)", "fragment count must be a whole number from 1 to 32");
        await Refused("from Posts where search(Body, 'x') include highlight(Body, 128, 2, { \"Color\": 1 })", "options are PreTags and PostTags, not 'Color'");
        await Refused("from Posts where search(Body, 'x') include highlight(Body, 128, 2, $o)", "PreTags must be 1 to 16 strings", new { o = new { PreTags = Array.Empty<string>() } });
        await Refused($"from index '{RqlConformance.StaticIndex}' where search(Body, 'x') include highlight(Body, 128, 2)", "give the field \"store\": true");
    }

    /// <summary>Every distinct word of the sample's bodies within two edits of <paramref name="word"/>, closest then most frequent first, as the index should suggest them.</summary>
    private static List<string> ExpectedSuggestions(List<SamplePost> sample, string word, int take, double accuracy = 0.5)
    {
        var postsHolding = sample.SelectMany(p => p.BodyTokens.Distinct()).GroupBy(t => t).ToDictionary(g => g.Key, g => g.Count());
        return postsHolding.Where(t => t.Key != word && Tokens.Distance(word, t.Key) <= 2)
            .Select(t => (Term: t.Key, Posts: t.Value, Similarity: 1f - (float)Tokens.Distance(word, t.Key) / Math.Max(word.Length, t.Key.Length)))
            .Where(t => t.Similarity >= accuracy)
            .OrderByDescending(t => t.Similarity).ThenByDescending(t => t.Posts).ThenBy(t => t.Term, StringComparer.Ordinal)
            .Take(take).Select(t => t.Term).ToList();
    }

    private static List<string> Suggested(JsonElement answer, string name, int index = 0) =>
        answer.GetProperty("results")[index].GetProperty(name).GetProperty("Suggestions").EnumerateArray().Select(s => s.GetString()!).ToList();

    public static async Task Suggestions_are_the_closest_indexed_words_then_the_most_frequent(HttpClient http, List<SamplePost> sample)
    {
        const string S = $"from index '{RqlConformance.StaticIndex}'";
        // Misspelled words of the sample: the real one first, then the others within two edits, as computed here.
        foreach (var (typo, real) in new[] { ("wikipeda", "wikipedia"), ("histroy", "history"), ("discusion", "discussion") })
        {
            var answer = await PageAsync(http, $"{S} select suggest(Body, '{typo}')");
            var suggested = Suggested(answer, "Body");
            Assert.Equal(real, suggested[0]);
            Assert.Equal(ExpectedSuggestions(sample, typo, 15), suggested);
        }
        // Options: how many, how close, several words at once, each under its name; a collection suggests through its automatic index.
        var two = await PageAsync(http, $"{S} select suggest(Body, 'histroy', {{ \"PageSize\": 3 }}) as H, suggest(Body, 'wikipeda', $o) as W",
            new { o = new { Accuracy = 0.85, Distance = "JaroWinkler", SortMode = "None" } });
        Assert.Equal(ExpectedSuggestions(sample, "histroy", 3), Suggested(two, "H", 0));
        Assert.Contains("wikipedia", Suggested(two, "W", 1));
        Assert.Equal(ExpectedSuggestions(sample, "histroy", 15), Suggested(await PageAsync(http, "from Posts select suggest(Body, 'Histroy')"), "Body"));
        // A word of the index itself is not suggested to itself; nothing close: nothing.
        Assert.DoesNotContain("history", Suggested(await PageAsync(http, $"{S} select suggest(Body, 'history')"), "Body"));
        Assert.Empty(Suggested(await PageAsync(http, $"{S} select suggest(Body, 'qqqqqqqqqq')"), "Body"));
    }

    public static async Task Suggestions_out_of_bounds_are_refused(HttpClient http)
    {
        const string S = $"from index '{RqlConformance.StaticIndex}'";
        async Task Refused(string rql, string detail)
        {
            var r = await http.PostAsJsonAsync("queries", new { query = rql });
            await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, detail);
        }
        await Refused($"{S} where Score > 1 select suggest(Body, 'x')", "suggest() asks the index's terms");
        await Refused($"{S} select suggest(Body, 'two words')", "suggest takes one word");
        await Refused($"{S} select suggest(Body, 'x', {{ \"PageSize\": 0 }})", "PageSize must be a whole number from 1 to 1024");
        await Refused($"{S} select suggest(Body, 'x', {{ \"Distance\": \"NGram\" }})", "NGram is not supported");
        await Refused($"{S} select suggest(Body, 'x', {{ \"Accuracy\": 2 }})", "Accuracy must be a number from 0 to 1");
        // A string where a number goes is refused like any wrong value, never a 500.
        await Refused($"{S} select suggest(Body, 'x', {{ \"PageSize\": \"10\" }})", "PageSize must be a whole number from 1 to 1024");
        await Refused($"{S} select suggest(Body, 'x', {{ \"Accuracy\": \"0.5\" }})", "Accuracy must be a number from 0 to 1");
        await Refused($"{S} select suggest(Body, 'x', {{ \"MaxEdits\": \"1\" }})", "MaxEdits must be 1 or 2");
        await Refused($"{S} select suggest(Nope, 'x')", "the index has no field 'Nope'");
        var stream = await http.PostAsJsonAsync("streams/queries", new { query = $"{S} select suggest(Body, 'x')" });
        await HttpJson.AssertProblem(stream, HttpStatusCode.BadRequest, "not streamed");
    }

    /// <summary>
    /// The words Lucene's MoreLikeThis picks from a post's body with its defaults, computed here: in the post at least twice, in at
    /// least 5 posts, scored by frequency × (1 + ln(posts ÷ (posts holding it + 1))), the best 25; null when the 25th ties the 26th.
    /// </summary>
    private static HashSet<string>? TellingWords(List<SamplePost> sample, SamplePost source)
    {
        var postsHolding = sample.SelectMany(p => p.BodyTokens.Distinct()).GroupBy(t => t).ToDictionary(g => g.Key, g => g.Count());
        var scored = source.BodyTokens.GroupBy(t => t).Where(g => g.Count() >= 2 && postsHolding[g.Key] >= 5)
            .Select(g => (Word: g.Key, Score: g.Count() * (1 + Math.Log(sample.Count / (double)(postsHolding[g.Key] + 1)))))
            .OrderByDescending(w => w.Score).ToList();
        if (scored.Count > 25 && Math.Abs(scored[24].Score - scored[25].Score) < 1e-6) return null;
        return scored.Take(25).Select(w => w.Word).ToHashSet();
    }

    private static List<string> Ids(JsonElement answer) =>
        answer.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();

    /// <param name="sharded">Kafka mode: each shard weighs words by its own frequencies (as Elasticsearch's shards do), so the likes are checked by what they share, not against one index's word list.</param>
    public static async Task More_like_this_finds_the_posts_sharing_the_telling_words_of_one(HttpClient http, List<SamplePost> sample, bool sharded = false)
    {
        const string S = $"from index '{RqlConformance.StaticIndex}'";
        // A long post whose 25 telling words are not decided by a tie.
        var source = sample.OrderByDescending(p => p.BodyTokens.Count).First(p => TellingWords(sample, p) is not null);
        var words = TellingWords(sample, source)!;
        var answer = await PageAsync(http, $"{S} where moreLikeThis(id() = $id, '{{ \"Fields\": [\"Body\"] }}')", new { id = source.Id });
        var likes = Ids(answer);
        Assert.NotEmpty(likes);
        Assert.DoesNotContain(source.Id, likes);
        var posts = sample.ToDictionary(p => p.Id);
        if (!sharded)
        {
            var expected = sample.Where(p => p.Id != source.Id && p.BodyTokens.Any(words.Contains)).Select(p => p.Id).ToHashSet();
            Assert.Equal(expected.Count, answer.GetProperty("totalResults").GetInt32());
            Assert.Subset(expected, likes.ToHashSet());
        }
        else Assert.All(likes, id => Assert.True(posts[id].BodyTokens.Intersect(source.BodyTokens).Any(), $"{id} shares no word with {source.Id}"));
        // Most alike first: by score, the first sharing more of the telling words than the last.
        var scores = answer.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("@metadata").GetProperty("@index-score").GetDouble()).ToList();
        Assert.Equal(scores.OrderByDescending(x => x).ToList(), scores);
        Assert.True(posts[likes[0]].BodyTokens.Intersect(words).Count() >= posts[likes[^1]].BodyTokens.Intersect(words).Count());

        // With a filter: the same likes, those that pass it, in the same order.
        var answers = await PageAsync(http, $"{S} where moreLikeThis(id() = $id, '{{ \"Fields\": [\"Body\"] }}') and PostTypeId = 2", new { id = source.Id });
        var passing = likes.Where(id => posts[id].Type == 2).ToList();
        Assert.Equal(passing, Ids(answers).Take(passing.Count));
        Assert.All(Ids(answers), id => Assert.Equal(2, posts[id].Type));

        // Streamed: the same likes in the same order.
        var streamed = await http.PostAsJsonAsync("streams/queries", new { query = $"{S} where moreLikeThis(id() = $id, '{{ \"Fields\": [\"Body\"] }}')", parameters = new { id = source.Id } });
        Assert.Equal(likes, (await streamed.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries)
            .Select(l => JsonDocument.Parse(l).RootElement.GetProperty("@metadata").GetProperty("@id").GetString()!).Take(likes.Count).ToList());
        // The document given instead of named: the same likes (itself among them now, being like itself).
        var given = Ids(await PageAsync(http, $"{S} where moreLikeThis($doc, $o)", new { doc = new { Body = source.Body }, o = new { Fields = new[] { "Body" } } }))
            .Where(id => id != source.Id).ToList();
        Assert.Equal(likes.Take(given.Count), given);
        // Fewer words asked for: fewer likes; a document that does not exist is liked by none.
        var fewer = (await PageAsync(http, $"{S} where moreLikeThis(id() = $id, $o)", new { id = source.Id, o = new { Fields = new[] { "Body" }, MaximumQueryTerms = 2 } }))
            .GetProperty("totalResults").GetInt32();
        Assert.True(fewer < answer.GetProperty("totalResults").GetInt32(), $"{fewer} likes with 2 words, {answer.GetProperty("totalResults")} with 25");
        Assert.Empty(Ids(await PageAsync(http, $"{S} where moreLikeThis(id() = 'posts/none')")));
        // On a collection (its automatic index makes Body a search field): the same likes.
        var collection = await PageAsync(http, "from Posts where moreLikeThis(id() = $id, '{ \"Fields\": [\"Body\"] }')", new { id = source.Id });
        Assert.Equal(answer.GetProperty("totalResults").GetInt32(), collection.GetProperty("totalResults").GetInt32());
    }

    public static async Task More_like_this_out_of_bounds_is_refused(HttpClient http)
    {
        const string S = $"from index '{RqlConformance.StaticIndex}'";
        async Task Refused(string rql, string detail)
        {
            var r = await http.PostAsJsonAsync("queries", new { query = rql });
            await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, detail);
        }
        await Refused($"{S} where moreLikeThis(id() = 'posts/1', '{{ \"Fields\": [\"Tags\"] }}')", "'Tags' is not one");
        await Refused($"{S} where moreLikeThis(id() = 'posts/1', '{{ \"MaximumQueryTerms\": 5000 }}')", "MaximumQueryTerms must be a whole number from 1 to 1,024");
        await Refused($"{S} where moreLikeThis(id() = 'posts/1', '{{ \"Colour\": 1 }}')", "not 'Colour'");
        await Refused($"{S} where moreLikeThis(id() = 'posts/1', '{{ \"MaximumQueryTerms\": \"5\" }}')", "MaximumQueryTerms must be a whole number");
        await Refused($"{S} where moreLikeThis(id() = 'posts/1', '{{ \"BoostFactor\": \"2\" }}')", "BoostFactor must be a number above 0");
        await Refused($"{S} where moreLikeThis('not json')", "not JSON");
        await Refused("from Posts where moreLikeThis(id() = 'posts/1')", "name them in its options' Fields");
    }
}
