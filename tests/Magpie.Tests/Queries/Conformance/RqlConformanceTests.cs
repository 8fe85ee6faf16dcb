using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using static Magpie.Tests.Queries.Conformance.Tokens;

namespace Magpie.Tests.Queries.Conformance;

/// <summary>
/// RQL as RavenDB users write it, over the Stack Exchange sample: each query's answer (the ids, over a stream, and the total)
/// is the set an independent computation selects — LINQ over the XML, Lucene's StandardAnalyzer for the words. Each runs on
/// the collection (its automatic index) or on a static index with Title and Body as full-text fields.
/// </summary>
public static class RqlConformance
{
    public const string StaticIndex = "Posts/Text";

    public const string StaticDefinition = """
        {
          "maps": ["map('Posts', p => ({ Title: p.Title || null, Body: p.Body, Tags: (p.Tags || '').replace(/^<|>$/g, '').split('><').filter(t => t.length > 0), Score: p.Score, PostTypeId: p.PostTypeId, OwnerUserId: p.OwnerUserId || null, CreationDate: p.CreationDate }))"],
          "fields": { "Title": { "indexing": "search" }, "Body": { "indexing": "search" } }
        }
        """;

    private const string S = $"from index '{StaticIndex}'";

    /// <summary>Name → (query, what it selects). Names are the theory's cases.</summary>
    public static readonly Dictionary<string, (string Rql, Func<SamplePost, bool> Expected)> Cases = new()
    {
        // search(): words, wildcards, phrases, operators, exclusions, fuzzy words
        ["word"] = ($"{S} where search(Body, 'sources')", p => Has(p.BodyTokens, "sources")),
        ["two words, any"] = ($"{S} where search(Body, 'primary sources')", p => Has(p.BodyTokens, "primary") || Has(p.BodyTokens, "sources")),
        ["two words, and"] = ($"{S} where search(Body, 'primary sources', and)", p => Has(p.BodyTokens, "primary") && Has(p.BodyTokens, "sources")),
        ["two words, or"] = ($"{S} where search(Body, 'primary sources', or)", p => Has(p.BodyTokens, "primary") || Has(p.BodyTokens, "sources")),
        ["trailing wildcard"] = ($"{S} where search(Body, 'sourc*')", p => Prefix(p.BodyTokens, "sourc")),
        ["trailing wildcard, upper case"] = ($"{S} where search(Body, 'SOURC*')", p => Prefix(p.BodyTokens, "sourc")),
        ["leading wildcard"] = ($"{S} where search(Body, '*ources')", p => Suffix(p.BodyTokens, "ources")),
        ["inner wildcard"] = ($"{S} where search(Body, 'hist*ry')", p => p.BodyTokens.Any(w => w.StartsWith("hist") && w.EndsWith("ry") && w.Length >= 6)),
        ["single-character wildcard"] = ($"{S} where search(Title, 'wh?')", p => p.TitleTokens.Any(w => w.Length == 3 && w.StartsWith("wh"))),
        ["wildcard and word, and"] = ($"{S} where search(Body, 'wiki* source', and)", p => Prefix(p.BodyTokens, "wiki") && Has(p.BodyTokens, "source")),
        ["phrase"] = ($"{S} where search(Body, '\"primary sources\"')", p => Phrase(p.BodyTokens, "primary", "sources")),
        ["phrase of three"] = ($"{S} where search(Body, '\"the middle ages\"')", p => Phrase(p.BodyTokens, "the", "middle", "ages")),
        ["phrase or word"] = ($"{S} where search(Body, '\"primary sources\" wikipedia')", p => Phrase(p.BodyTokens, "primary", "sources") || Has(p.BodyTokens, "wikipedia")),
        ["phrase and word"] = ($"{S} where search(Body, '\"primary sources\" wikipedia', and)", p => Phrase(p.BodyTokens, "primary", "sources") && Has(p.BodyTokens, "wikipedia")),
        ["exclusion"] = ($"{S} where search(Body, 'sources -wikipedia')", p => Has(p.BodyTokens, "sources") && !Has(p.BodyTokens, "wikipedia")),
        ["exclusion of a phrase"] = ($"{S} where search(Body, 'sources -\"primary sources\"')", p => Has(p.BodyTokens, "sources") && !Phrase(p.BodyTokens, "primary", "sources")),
        ["only an exclusion"] = ($"{S} where search(Title, '-history')", p => !Has(p.TitleTokens, "history")),
        ["fuzzy word"] = ($"{S} where search(Body, 'histroy~')", p => Fuzzy(p.BodyTokens, "histroy", 2)),
        ["fuzzy word, one edit"] = ($"{S} where search(Body, 'histroy~1')", p => Fuzzy(p.BodyTokens, "histroy", 1)),
        ["fuzzy word, similarity"] = ($"{S} where search(Body, 'soruces~0.8')", p => Fuzzy(p.BodyTokens, "soruces", 1)),
        ["word and fuzzy, and"] = ($"{S} where search(Body, 'roman empir~1', and)", p => Has(p.BodyTokens, "roman") && Fuzzy(p.BodyTokens, "empir", 1)),
        ["search with a parameter"] = ($"{S} where search(Body, $q)", p => Prefix(p.BodyTokens, "tag")),
        ["search on the title"] = ($"{S} where search(Title, 'question*')", p => Prefix(p.TitleTokens, "question")),
        ["search or search"] = ($"{S} where search(Title, 'tag') or search(Body, 'retag*')", p => Has(p.TitleTokens, "tag") || Prefix(p.BodyTokens, "retag")),
        ["search and a number"] = ($"{S} where search(Body, 'sources') and Score >= 5", p => Has(p.BodyTokens, "sources") && p.Score >= 5),
        ["not search"] = ($"{S} where PostTypeId = 1 and not search(Title, 'why')", p => p.Type == 1 && !Has(p.TitleTokens, "why")),
        // proximity(), boost(), fuzzy(), endsWith(), regex(), lucene()
        ["proximity 0"] = ($"{S} where proximity(search(Body, 'primary sources'), 0)", p => Near(p.BodyTokens, "primary", "sources", 0)),
        ["proximity 3"] = ($"{S} where proximity(search(Body, 'primary sources'), 3)", p => Near(p.BodyTokens, "primary", "sources", 3)),
        ["proximity 10"] = ($"{S} where proximity(search(Body, 'history question'), 10)", p => Near(p.BodyTokens, "history", "question", 10)),
        ["boost keeps the set"] = ($"{S} where boost(search(Body, 'sources'), 10) or search(Body, 'wikipedia')", p => Has(p.BodyTokens, "sources") || Has(p.BodyTokens, "wikipedia")),
        ["fuzzy() on a search field"] = ($"{S} where fuzzy(Body = 'histroy', 1)", p => Fuzzy(p.BodyTokens, "histroy", 1)),
        ["fuzzy() on an exact field"] = ($"{S} where fuzzy(Tags = 'discusion', 0.8)", p => p.Tags.Any(t => Distance(t, "discusion") <= 1)),
        ["fuzzy() on the collection"] = ("from Posts where fuzzy(Title = 'shuold we include source in answers?', 2)", p => p.Title is { } t && Distance(t.ToLowerInvariant(), "shuold we include source in answers?") <= 2),
        ["endsWith on the collection"] = ("from Posts where endsWith(Title, '?')", p => p.Title?.EndsWith('?') == true),
        ["endsWith, any case"] = ("from Posts where endsWith(Title, 'HISTORY?')", p => p.Title?.EndsWith("history?", StringComparison.OrdinalIgnoreCase) == true),
        ["endsWith on a tag"] = ($"{S} where endsWith(Tags, '-request')", p => p.Tags.Any(t => t.EndsWith("-request"))),
        ["startsWith on a tag"] = ($"{S} where startsWith(Tags, 'feature')", p => p.Tags.Any(t => t.StartsWith("feature"))),
        ["regex on the collection"] = ("from Posts where regex(Title, '^why .*\\\\?$')", p => p.Title is { } t && Regex.IsMatch(t, "^why .*\\?$", RegexOptions.IgnoreCase)),
        ["regex on a tag"] = ($"{S} where regex(Tags, '^[a-z]+-[a-z]+$')", p => p.Tags.Any(t => Regex.IsMatch(t, "^[a-z]+-[a-z]+$"))),
        ["regex, unanchored"] = ($"{S} where regex(Tags, 'quest')", p => p.Tags.Any(t => t.Contains("quest"))),
        ["lucene syntax"] = ($"{S} where lucene(Body, 'primary AND sourc*')", p => Has(p.BodyTokens, "primary") && Prefix(p.BodyTokens, "sourc")),
        ["lucene syntax, phrase"] = ($"{S} where lucene(Body, '\"primary sources\" OR wikipedia')", p => Phrase(p.BodyTokens, "primary", "sources") || Has(p.BodyTokens, "wikipedia")),
        ["lucene syntax, not"] = ($"{S} where lucene(Body, 'sources -wikipedia')", p => Has(p.BodyTokens, "sources") && !Has(p.BodyTokens, "wikipedia")),
        // filters
        ["id() ="] = ("from Posts where id() = 'posts/1'", p => p.Id == "posts/1"),
        ["id() in"] = ("from Posts where id() in ('posts/1', 'posts/2', 'posts/404404')", p => p.Id is "posts/1" or "posts/2"),
        ["id() startsWith"] = ($"{S} where startsWith(id(), 'posts/10')", p => p.Id.StartsWith("posts/10")),
        ["id() endsWith"] = ($"{S} where endsWith(id(), '7')", p => p.Id.EndsWith('7')),
        // Sort directions in all their spellings (the order itself is asserted by the sorting tests; here, what is selected).
        // (On the static index: a subscription, which the collection's cases also run as, delivers in change order and refuses order by.)
        ["order by … descending"] = ($"{S} where Score >= 10 order by Score descending", p => p.Score >= 10),
        ["order by … ascending"] = ($"{S} where Score >= 10 order by Score ascending", p => p.Score >= 10),
        ["order by … asc"] = ($"{S} where Score >= 10 order by CreationDate asc", p => p.Score >= 10),
        // RavenDB compares ids case-insensitively (the ids here are lower case as stored).
        ["id() = in another case"] = ("from Posts where id() = 'POSTS/1'", p => p.Id == "posts/1"),
        ["id() in, in other cases"] = ("from Posts where id() in ('Posts/1', 'pOsTs/2')", p => p.Id is "posts/1" or "posts/2"),
        ["id() startsWith in another case"] = ($"{S} where startsWith(id(), 'Posts/10')", p => p.Id.StartsWith("posts/10")),
        ["id() endsWith in another case"] = ($"{S} where endsWith(id(), 'S/7')", p => p.Id.EndsWith("s/7")),
        ["id() and a field"] = ("from Posts where id() in ('posts/1', 'posts/2') and PostTypeId = 2", p => p.Id is "posts/1" or "posts/2" && p.Type == 2),
        ["equals"] = ("from Posts where PostTypeId = 1", p => p.Type == 1),
        ["not equals"] = ("from Posts where PostTypeId != 1", p => p.Type != 1),
        ["greater"] = ("from Posts where Score > 10", p => p.Score > 10),
        // Written as RavenDB's docs write them: the collection's alias on every path, == for =, comments, a quoted collection,
        // the `true and not …` a client sends for a leading negation.
        ["alias in where (RavenDB docs: filtering)"] = ("from Posts as p where p.Score > 10 and p.PostTypeId = 1", p => p.Score > 10 && p.Type == 1),
        ["alias in where through a function"] = ("from Posts as p where startsWith(p.Title, 'Why') and p.Score >= 0", p => p.Title?.StartsWith("why", StringComparison.OrdinalIgnoreCase) == true && p.Score >= 0),
        ["== is ="] = ("from Posts where PostTypeId == 2 and Score == 3", p => p.Type == 2 && p.Score == 3),
        ["comments"] = ("from Posts // questions only\nwhere PostTypeId = 1 /* and scored */ and Score > 5", p => p.Type == 1 && p.Score > 5),
        ["quoted collection"] = ("from \"Posts\" where Score > 20", p => p.Score > 20),
        ["true and not (a client's leading negation)"] = ("from Posts where true and not exists(Title) and Score > 2", p => p.Title is null && p.Score > 2),
        ["at most"] = ("from Posts where Score <= -2", p => p.Score <= -2),
        ["between"] = ("from Posts where Score between 3 and 5", p => p.Score is >= 3 and <= 5),
        ["in numbers"] = ("from Posts where Score in (1, 2, 3)", p => p.Score is 1 or 2 or 3),
        ["in strings"] = ($"{S} where Tags in ('discussion', 'support')", p => p.Tags.Contains("discussion") || p.Tags.Contains("support")),
        ["all in"] = ($"{S} where Tags all in ('discussion', 'support')", p => p.Tags.Contains("discussion") && p.Tags.Contains("support")),
        // What RavenDB's clients send for In() / ContainsAny() / ContainsAll(): one parameter holding an array.
        ["in an array parameter"] = ($"{S} where Tags in ($tags)", p => p.Tags.Contains("discussion") || p.Tags.Contains("support")),
        ["all in an array parameter"] = ($"{S} where Tags all in ($tags)", p => p.Tags.Contains("discussion") && p.Tags.Contains("support")),
        ["in an array parameter beside a literal"] = ($"{S} where Score in ($scores, 7)", p => p.Score is 1 or 2 or 7),
        ["exists"] = ("from Posts where exists(Title)", p => p.Title is not null),
        ["= null matches a missing field"] = ("from Posts where Title = null and Score > 5", p => p.Title is null && p.Score > 5),
        ["!= null"] = ("from Posts where Title != null and Score > 5", p => p.Title is not null && p.Score > 5),
        ["not exists"] = ("from Posts where PostTypeId = 2 and not exists(Title)", p => p.Type == 2 && p.Title is null),
        ["date range"] = ("from Posts where CreationDate >= '2012-01-01' and CreationDate < '2013-01-01'", p => p.CreatedAt.Year == 2012),
        ["date between"] = ("from Posts where CreationDate between '2011-10-11' and '2011-10-12T23:59:59'", p => p.CreatedAt >= new DateTime(2011, 10, 11) && p.CreatedAt <= new DateTime(2011, 10, 12, 23, 59, 59)),
        ["or of ands"] = ("from Posts where (PostTypeId = 1 and Score > 20) or (PostTypeId = 2 and Score > 30)", p => p.Type == 1 && p.Score > 20 || p.Type == 2 && p.Score > 30),
        ["not of an or"] = ("from Posts where not (PostTypeId = 1 or PostTypeId = 2)", p => p.Type is not 1 and not 2),
        ["startsWith on the collection"] = ("from Posts where startsWith(Title, 'why')", p => p.Title?.StartsWith("why", StringComparison.OrdinalIgnoreCase) == true),
        ["exact()"] = ("from Posts where exact(Title = 'Should we include sources in answers?')", p => p.Title == "Should we include sources in answers?"),
        ["exact() with other case matches nothing"] = ("from Posts where exact(Title = 'should we include sources in answers?')", p => p.Title == "should we include sources in answers?"),
        ["case-insensitive equals"] = ("from Posts where Title = 'SHOULD WE INCLUDE SOURCES IN ANSWERS?'", p => string.Equals(p.Title, "should we include sources in answers?", StringComparison.OrdinalIgnoreCase)),
        ["owner"] = ("from Posts where OwnerUserId = 12", p => p.Owner == 12),
        ["search on the collection"] = ("from Posts where search(Body, 'sourc*')", p => Prefix(p.BodyTokens, "sourc")),
        ["phrase on the collection"] = ("from Posts where search(Body, '\"primary sources\"')", p => Phrase(p.BodyTokens, "primary", "sources")),
        ["proximity on the collection"] = ("from Posts where proximity(search(Body, 'primary sources'), 2)", p => Near(p.BodyTokens, "primary", "sources", 2)),
        ["lucene on the collection"] = ("from Posts where lucene(Body, 'wikipedia OR wiki*')", p => Prefix(p.BodyTokens, "wiki")),
        ["search and filter on the collection"] = ("from Posts where search(Title, 'tag*') and PostTypeId = 1", p => Prefix(p.TitleTokens, "tag") && p.Type == 1),
        ["title words, and"] = ($"{S} where search(Title, 'why questions', and)", p => Has(p.TitleTokens, "why") && Has(p.TitleTokens, "questions")),
        ["title phrase"] = ($"{S} where search(Title, '\"the site\"')", p => Phrase(p.TitleTokens, "the", "site")),
        ["lucene fuzzy"] = ($"{S} where lucene(Body, 'histroy~1')", p => Fuzzy(p.BodyTokens, "histroy", 1)),
        ["lucene field range"] = ($"{S} where lucene(Body, 'wikipedia') and Score between 0 and 3", p => Has(p.BodyTokens, "wikipedia") && p.Score is >= 0 and <= 3),
        ["boost inside and"] = ($"{S} where boost(search(Body, 'primary'), 3) and search(Body, 'sources')", p => Has(p.BodyTokens, "primary") && Has(p.BodyTokens, "sources")),
        ["tags in and not"] = ($"{S} where Tags in ('discussion', 'questions') and not Tags = 'answers'", p => (p.Tags.Contains("discussion") || p.Tags.Contains("questions")) && !p.Tags.Contains("answers")),
        ["static date range"] = ($"{S} where CreationDate between '2014-01-01' and '2014-12-31T23:59:59'", p => p.CreatedAt.Year == 2014),
        ["owner in"] = ($"{S} where OwnerUserId in (12, 771, 1401)", p => p.Owner is 12 or 771 or 1401),
    };
}

/// <summary>The conformance cases against embedded Magpie.</summary>
public sealed class RqlConformanceFixture : IAsyncLifetime
{
    public MagpieProcess Magpie { get; private set; } = null!;
    public List<SamplePost> Posts { get; } = SamplePost.Load();

    public async Task InitializeAsync()
    {
        Magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", Magpie.BaseUrl.ToString());
        if (exit != 0) throw new InvalidOperationException(output);
        await Magpie.Http.PutIndexAsync(RqlConformance.StaticIndex, RqlConformance.StaticDefinition);
        // Documents that refer to each other by id, as RavenDB's examples do (the sample's references are numbers).
        foreach (var (id, json) in Related)
        {
            var put = await Magpie.Http.PutAsync($"docs/{id}", HttpJson.Json(json));
            if (put.StatusCode != HttpStatusCode.Created) throw new InvalidOperationException(await put.Content.ReadAsStringAsync());
        }
    }

    public static readonly (string Id, string Json)[] Related =
    [
        ("companies/1", """{"Name": "Acme", "City": "Lyon"}"""),
        ("companies/2", """{"Name": "Globex", "City": "Oslo"}"""),
        ("products/1", """{"Name": "Burr grinder", "Price": 120}"""),
        ("products/2", """{"Name": "Kettle", "Price": 40}"""),
        ("products/3", """{"Name": "Scale", "Price": 25}"""),
        ("orders/1", """{"Company": "companies/1", "Lines": [{"Product": "products/1", "Quantity": 2}, {"Product": "products/2", "Quantity": 1}]}"""),
        ("orders/2", """{"Company": "companies/2", "Lines": [{"Product": "products/2", "Quantity": 5}]}"""),
        ("orders/3", """{"Company": "companies/404", "Lines": [{"Product": "products/3", "Quantity": 1}, {"Product": "products/404", "Quantity": 1}]}"""),
    ];

    public async Task DisposeAsync() => await Magpie.DisposeAsync();
}

public sealed class RqlConformanceTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>
{
    public static IEnumerable<object[]> Names => RqlConformance.Cases.Keys.Select(k => new object[] { k });

    [Theory]
    [MemberData(nameof(Names))]
    public async Task The_answer_is_the_independently_computed_one(string name)
    {
        var (rql, expected) = RqlConformance.Cases[name];
        var want = fx.Posts.Where(expected).Select(p => p.Id).Order(StringComparer.Ordinal).ToList();
        Assert.True(want.Count > 0 || name.Contains("nothing"), $"{name}: the case selects nothing in the sample; pick words that occur");
        var got = await RqlAnswers.IdsAsync(fx.Magpie.Http, rql);
        Assert.Equal(want, got);
    }

    [Fact]
    public async Task Order_by_a_path_written_from_the_alias_sorts_by_that_field()
    {
        // The probe's: `order by o.Freight desc` was dropped (the alias made it a field no entry has).
        var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = "from Posts as p where p.Score >= 5 order by p.Score desc, id() select id() as Id", pageSize = 1024, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var got = (await r.JsonAsync()).GetProperty("results").EnumerateArray().Select(x => x.GetProperty("Id").GetString()!).ToList();
        var want = fx.Posts.Where(p => p.Score >= 5).OrderByDescending(p => p.Score).ThenBy(p => p.Id, StringComparer.Ordinal).Select(p => p.Id).ToList();
        Assert.Equal(want, got);
    }
}

public static class RqlAnswers
{
    public static readonly Dictionary<string, JsonElement> Parameters = new()
    {
        ["q"] = JsonSerializer.SerializeToElement("tag*"),
        ["tags"] = JsonSerializer.SerializeToElement(new[] { "discussion", "support" }),
        ["scores"] = JsonSerializer.SerializeToElement(new[] { 1, 2 }),
    };

    /// <summary>The ids a query selects: its total once not stale, then every result over a stream (the two must agree).</summary>
    public static async Task<List<string>> IdsAsync(HttpClient http, string rql)
    {
        var counted = await http.PostAsJsonAsync("queries", new { query = rql, parameters = Parameters, pageSize = 0, waitForNonStaleResults = true, timeoutMs = 120_000 });
        Assert.True(counted.IsSuccessStatusCode, $"{rql}\n{await counted.Content.ReadAsStringAsync()}");
        var total = (await counted.JsonAsync()).GetProperty("totalResults").GetInt64();
        using var streamed = await http.PostAsJsonAsync("streams/queries", new { query = rql, parameters = Parameters });
        Assert.Equal(HttpStatusCode.OK, streamed.StatusCode);
        var ids = (await streamed.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries)
            .Select(l => JsonDocument.Parse(l).RootElement.GetProperty("@metadata").GetProperty("@id").GetString()!)
            .Order(StringComparer.Ordinal).ToList();
        Assert.Equal(total, ids.Count);
        return ids;
    }
}

/// <summary>What the engine or the language cannot answer exactly is refused with a 400 naming it, never dropped.</summary>
public sealed class RqlRefusalTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>
{
    private const string S = $"from index '{RqlConformance.StaticIndex}'";

    [Theory]
    [InlineData($"{S} where search(Body, '\"primary sources')", "quote that is never closed")]
    [InlineData($"{S} where proximity(search(Body, 'primary sourc*'), 3)", "proximity() takes plain words: 'sourc*' is a wildcard")]
    [InlineData($"{S} where proximity(search(Body, '\"primary sources\" x'), 3)", "proximity() takes plain words")]
    [InlineData($"{S} where proximity(search(Body, 'sources'), 3)", "at least two words")]
    [InlineData($"{S} where proximity(search(Body, 'a b'), -1)", "proximity's distance must be a whole number from 0 to 1,000")]
    [InlineData($"{S} where proximity(search(Body, 'a b', and), 2)", "without and/or")]
    [InlineData($"{S} where search(Body, 'a b', maybe)", "expected and or or")]
    [InlineData($"{S} where search(Body, 'histroy~3.5')", "after '~' comes an edit distance")]
    [InlineData($"{S} where fuzzy(Tags = 'x', 3)", "fuzzy's factor must be a number from 0 to 2")]
    [InlineData($"{S} where fuzzy(Body = 'two words', 1)", "takes one word")]
    [InlineData($"{S} where fuzzy(Tags > 'x', 1)", "expected '=' after 'Tags'")]
    [InlineData($"{S} where boost(search(Body, 'a'), 0)", "boost's factor must be a number")]
    [InlineData($"{S} where regex(Tags, '([a-z')", "not a valid regular expression")]
    [InlineData($"{S} where lucene(Body, 'a AND (b')", "lucene() text does not parse")]
    [InlineData($"{S} where lucene(Body, '*ources')", "lucene() text does not parse")]
    [InlineData($"{S} where search(id(), 'x')", "search() searches text fields")]
    [InlineData($"{S} where Titel = 'x'", "the index has no field 'Titel'; its fields: Body, CreationDate, OwnerUserId, PostTypeId, Score, Tags, Title")]
    [InlineData($"{S} order by Sccore", "the index has no field 'Sccore'")]
    [InlineData($"{S} where search(Body, 'x') and regex(Tags, 'a')", null)]
    [InlineData("from Posts where not true", "not true matches no document")]
    [InlineData("from Posts where Score = 9007199254740993.5", "more digits than Magpie keeps")]
    [InlineData("from Posts where Score < -9223372036854775809", "more digits than Magpie keeps")]
    [InlineData("from Posts order by random(Title)", "random() takes a seed")]
    [InlineData("from Posts order by random($p)", "parameter $p is not in")]
    public async Task Constructs_that_cannot_be_answered_exactly_are_refused_with_a_400_naming_them(string rql, string? expected)
    {
        var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = rql, pageSize = 5, waitForNonStaleResults = true, timeoutMs = 60_000 });
        if (expected is null) { Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync()); return; }
        await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, expected);
    }

    [Fact]
    public async Task Fuzzy_matches_every_term_within_its_edits_not_only_the_closest_fifty()
    {
        // 100 words one substitution from "mmmm" (Lucene's default fuzzy rewrite keeps the 50 closest terms and drops the rest).
        var words = Enumerable.Range(0, 4).SelectMany(i => "abcdefghijklnopqrstuvwxyz".Take(25).Select(c => "mmmm".Remove(i, 1).Insert(i, c.ToString()))).ToList();
        Assert.Equal(100, words.Distinct().Count());
        var bulk = string.Join(",", words.Select((w, i) => JsonSerializer.Serialize(new { method = "PUT", id = $"fuzzy/{i}", document = new { Word = w, Text = w + " tea" } })));
        Assert.True((await fx.Magpie.Http.PostAsync("bulk_docs", HttpJson.Json($"[{bulk}]"))).IsSuccessStatusCode);
        foreach (var rql in new[] { "from fuzzy where fuzzy(Word = 'mmmm', 1)", "from fuzzy where search(Text, 'mmmm~1')", "from fuzzy where lucene(Text, 'mmmm~1')" })
        {
            var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = rql, pageSize = 0, waitForNonStaleResults = true, timeoutMs = 60_000 });
            Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
            Assert.Equal(100, (await r.JsonAsync()).GetProperty("totalResults").GetInt32());
        }
    }

    [Fact]
    public async Task A_regex_that_backtracks_forever_is_stopped_by_its_time_limit()
    {
        // A backreference keeps the pattern off the linear engine; on a long term it backtracks exponentially.
        await fx.Magpie.Http.PutAsync("docs/evil/1", HttpJson.Json($$"""{"Word": "{{new string('a', 40)}}!"}"""));
        var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = "from evil where regex(Word, '^(a+)+\\\\1$')", waitForNonStaleResults = true, timeoutMs = 60_000 });
        await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, "regex()");
        // The process serves on.
        Assert.True((await fx.Magpie.Http.GetAsync("health")).IsSuccessStatusCode);
    }
}
