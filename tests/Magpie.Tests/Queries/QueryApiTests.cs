using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Xml.Linq;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;

namespace Magpie.Tests.Queries;

/// <summary>The embedded magpie with the Stack Exchange sample imported, an index defined over HTTP, queried over HTTP.</summary>
public sealed class ImportedSampleFixture : IAsyncLifetime
{
    public MagpieProcess Magpie { get; private set; } = null!;
    public List<XElement> Posts { get; } = new StackExchangeXml(RepoPaths.StackExchangeSample).Posts;

    public const string Index = """
        {
          "maps": ["map('Posts', p => ({ Title: p.Title, Tags: (p.Tags || '').replace(/^<|>$/g, '').split('><').filter(t => t.length > 0), Score: p.Score, CreationDate: p.CreationDate, Type: p.PostTypeId }))"],
          "fields": { "Title": { "indexing": "search", "store": true }, "Score": { "store": true } }
        }
        """;

    public async Task InitializeAsync()
    {
        Magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", Magpie.BaseUrl.ToString());
        if (exit != 0) throw new InvalidOperationException(output);
        var put = await Magpie.Http.PutAsync("indexes/Posts/ByTags", HttpJson.Json(Index));
        if (put.StatusCode != HttpStatusCode.NoContent) throw new InvalidOperationException(await put.Content.ReadAsStringAsync());
    }

    public async Task DisposeAsync() => await Magpie.DisposeAsync();
}

public sealed class QueryApiTests(ImportedSampleFixture fx) : IClassFixture<ImportedSampleFixture>
{
    private HttpClient Http => fx.Magpie.Http;

    private static string[] TagsOf(XElement p) => ((string?)p.Attribute("Tags") ?? "").Trim('<', '>').Split("><", StringSplitOptions.RemoveEmptyEntries);

    private async Task<JsonElement> Query(string rql, object? parameters = null, int pageSize = 1024, string? cursor = null)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = rql, parameters, pageSize, cursor, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        return await r.JsonAsync();
    }

    private static List<string> Ids(JsonElement response) =>
        response.GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();

    [Theory]
    [InlineData(2_000_000_000, 25, "start + pageSize may reach 1,000,000 at most")]
    [InlineData(-5, 25, "start must be 0 or more")]
    [InlineData(0, 5000, "pageSize must be 0 (the count only) to 1024")]
    [InlineData(0, -1, "pageSize must be 0 (the count only) to 1024")]
    public async Task Paging_the_engine_cannot_serve_is_refused_before_it_runs(int start, int pageSize, string expected)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByTags'", start, pageSize });
        Assert.Equal(System.Net.HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Contains(expected, (await r.JsonAsync()).GetProperty("detail").GetString());
        var rql = await Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByTags' limit 5000" });
        Assert.Contains("limit must be 0 (the count only) to 1024", (await rql.JsonAsync()).GetProperty("detail").GetString());
        Assert.True((await Query("from index 'Posts/ByTags' where Tags = 'discussion'")).GetProperty("totalResults").GetInt64() > 0);
    }

    [Fact]
    public async Task Stored_fields_answer_a_projection_without_reading_documents_and_the_answer_says_so()
    {
        var scores = fx.Posts.ToDictionary(p => "posts/" + (string)p.Attribute("Id")!, p => ((string?)p.Attribute("Title"), (int)p.Attribute("Score")!));
        // Title and Score are stored in Posts/ByTags: the values come from the index.
        var stored = await Query("from index 'Posts/ByTags' where Tags = 'discussion' select id() as Id, Title, Score");
        Assert.Equal("index", stored.GetProperty("resultsFrom").GetString());
        Assert.NotEmpty(stored.GetProperty("results").EnumerateArray());
        foreach (var r in stored.GetProperty("results").EnumerateArray())
        {
            var (title, score) = scores[r.GetProperty("Id").GetString()!];
            Assert.Equal(title, r.GetProperty("Title").GetString());
            Assert.Equal(score, r.GetProperty("Score").GetInt32());
        }
        // Type is not stored: those results read their documents.
        var read = await Query("from index 'Posts/ByTags' where Tags = 'discussion' select Title, PostTypeId");
        Assert.Equal("documents", read.GetProperty("resultsFrom").GetString());
        using var stream = await Http.PostAsJsonAsync("streams/queries", new { query = "from index 'Posts/ByTags' select Title, Score" });
        Assert.Equal("index", stream.Headers.GetValues("Magpie-Results-From").Single());
        using var documents = await Http.PostAsJsonAsync("streams/queries", new { query = "from index 'Posts/ByTags'" });
        Assert.Equal("documents", documents.Headers.GetValues("Magpie-Results-From").Single());
    }

    [Fact]
    public async Task Page_size_zero_answers_how_many_and_no_documents()
    {
        var expected = fx.Posts.Count(p => TagsOf(p).Contains("discussion"));
        foreach (var count in new[] { await Query("from index 'Posts/ByTags' where Tags = 'discussion'", pageSize: 0), await Query("from index 'Posts/ByTags' where Tags = 'discussion' limit 0") })
        {
            Assert.Equal(expected, count.GetProperty("totalResults").GetInt64());
            Assert.Equal(0, count.GetProperty("results").GetArrayLength());
            Assert.Equal(JsonValueKind.Null, count.GetProperty("nextCursor").ValueKind);
        }
    }

    [Theory]
    [InlineData("or-20000", "limit")]
    [InlineData("or-2000", "more than 1,024 conditions")]
    [InlineData("parens", "more than 64 levels deep")]
    [InlineData("not", "more than 64 levels deep")]
    [InlineData("in", "more than 1,024 values")]
    [InlineData("long", "the limit is 262,144")]
    public async Task A_query_past_a_parser_limit_is_refused_with_400_and_the_process_answers_on(string shape, string expected)
    {
        var rql = shape switch
        {
            // The hostile inputs of issue 17: each of these used to overflow the stack and end the process.
            "or-20000" => "from index 'Posts/ByTags' where " + string.Join(" or ", Enumerable.Range(0, 20_000).Select(i => $"Tags = 't{i}'")),
            "or-2000" => "from index 'Posts/ByTags' where " + string.Join(" or ", Enumerable.Range(0, 2_000).Select(i => $"Tags = 't{i}'")),
            "parens" => "from index 'Posts/ByTags' where " + new string('(', 100_000) + "Tags = 'x'" + new string(')', 100_000),
            "not" => "from index 'Posts/ByTags' where " + string.Concat(Enumerable.Repeat("not ", 10_000)) + "Tags = 'x'",
            "in" => "from index 'Posts/ByTags' where Tags in (" + string.Join(", ", Enumerable.Range(0, 2_000).Select(i => $"'t{i}'")) + ")",
            _ => "from index 'Posts/ByTags' where Tags = '" + new string('x', 300_000) + "'",
        };
        var r = await Http.PostAsJsonAsync("queries", new { query = rql });
        Assert.Equal(System.Net.HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Equal("application/problem+json", r.Content.Headers.ContentType?.MediaType);
        Assert.Contains(expected, (await r.JsonAsync()).GetProperty("detail").GetString());
        // The limits sit above what real queries need: 1,024 conditions and 64 levels still run.
        var wide = "from index 'Posts/ByTags' where " + string.Join(" or ", Enumerable.Range(0, 1_024).Select(i => i == 0 ? "Tags = 'discussion'" : $"Tags = 'none-{i}'"));
        Assert.True((await Query(wide)).GetProperty("totalResults").GetInt64() > 0);
        var deep = "from index 'Posts/ByTags' where " + new string('(', 63) + "Tags = 'discussion'" + new string(')', 63);
        Assert.True((await Query(deep)).GetProperty("totalResults").GetInt64() > 0);
    }

    [Fact]
    public async Task A_number_field_compared_with_a_string_is_coerced_when_it_is_a_number_and_refused_when_not()
    {
        var numeric = (await Query("from index 'Posts/ByTags' where Score >= 10")).GetProperty("totalResults").GetInt64();
        Assert.True(numeric > 0);
        Assert.Equal(numeric, (await Query("from index 'Posts/ByTags' where Score >= '10'")).GetProperty("totalResults").GetInt64());
        Assert.Equal(numeric, (await Query("from index 'Posts/ByTags' where Score >= $s", new { s = "10" })).GetProperty("totalResults").GetInt64());
        var refused = await Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByTags' where Score > 'abc'" });
        Assert.Equal(HttpStatusCode.BadRequest, refused.StatusCode);
        Assert.Contains("'Score' holds numbers: compare it with a number, not 'abc'", await refused.Content.ReadAsStringAsync());
        // Dates still range as dates, strings on string fields as strings.
        Assert.True((await Query("from index 'Posts/ByTags' where CreationDate >= '2012-01-01'")).GetProperty("totalResults").GetInt64() > 0);
    }

    [Fact]
    public async Task Indexes_run_in_process_no_java_is_started()
    {
        // The index is defined and searched (its results checked by the other tests); nothing below magpie may be a JVM.
        Assert.True((await Query("from index 'Posts/ByTags' where Tags = 'discussion'")).GetProperty("totalResults").GetInt64() > 0);
        var descendants = Descendants(fx.Magpie.Pid);
        Assert.DoesNotContain(descendants, p => p.Name.Contains("java", StringComparison.OrdinalIgnoreCase));
    }

    /// <summary>Every process below <paramref name="pid"/> (children, theirs, …) with its command name, from /proc.</summary>
    private static List<(int Pid, string Name)> Descendants(int pid)
    {
        var parents = new Dictionary<int, List<(int, string)>>();
        foreach (var dir in Directory.GetDirectories("/proc"))
        {
            if (!int.TryParse(Path.GetFileName(dir), out var child)) continue;
            try
            {
                var stat = File.ReadAllText(Path.Combine(dir, "stat"));
                var name = stat[(stat.IndexOf('(') + 1)..stat.LastIndexOf(')')];
                var parent = int.Parse(stat[(stat.LastIndexOf(')') + 2)..].Split(' ')[1]);
                if (!parents.TryGetValue(parent, out var list)) parents[parent] = list = [];
                list.Add((child, name));
            }
            catch (IOException) { }   // exited while we looked
        }
        var found = new List<(int, string)>();
        var queue = new Queue<int>([pid]);
        while (queue.TryDequeue(out var next))
            foreach (var (child, name) in parents.GetValueOrDefault(next, []))
            {
                found.Add((child, name));
                queue.Enqueue(child);
            }
        return found;
    }

    [Fact]
    public async Task Queries_over_http_answer_what_the_XML_says_with_documents_projections_and_staleness()
    {
        var discussion = await Query("from index 'Posts/ByTags' where Tags = $tag", new { tag = "Discussion" });
        Assert.False(discussion.GetProperty("isStale").GetBoolean());
        Assert.Equal(fx.Posts.Count(p => TagsOf(p).Contains("discussion")), discussion.GetProperty("totalResults").GetInt64());
        Assert.Equal(fx.Posts.Where(p => TagsOf(p).Contains("discussion")).Select(p => "posts/" + (string)p.Attribute("Id")!).Order(StringComparer.Ordinal),
            Ids(discussion).Order(StringComparer.Ordinal));

        var top = await Query("from index 'Posts/ByTags' where Type = 1 and CreationDate >= '2012-01-01' order by Score desc select Title, Score as Points limit 5");
        var expected = fx.Posts.Where(p => (string)p.Attribute("PostTypeId")! == "1" && string.CompareOrdinal((string)p.Attribute("CreationDate")!, "2012-01-01") >= 0)
            .OrderByDescending(p => (long)p.Attribute("Score")!).ThenBy(p => "posts/" + (string)p.Attribute("Id")!, StringComparer.Ordinal).Take(5).ToList();
        var rows = top.GetProperty("results").EnumerateArray().ToList();
        Assert.Equal(expected.Select(p => (string?)p.Attribute("Title")), rows.Select(r => r.GetProperty("Title").GetString()));
        Assert.Equal(expected.Select(p => (long)p.Attribute("Score")!), rows.Select(r => r.GetProperty("Points").GetInt64()));

        var searched = await Query("from index 'Posts/ByTags' where search(Title, 'sources') order by score()");
        Assert.True(searched.GetProperty("totalResults").GetInt64() > 0);
        Assert.All(searched.GetProperty("results").EnumerateArray(), d => Assert.Contains("source", d.GetProperty("Title").GetString()!, StringComparison.OrdinalIgnoreCase));
        // Ordered by score(), each result says its score (@metadata.@index-score, as RavenDB), best first; the rest is the document as GET /docs gives it.
        var scores = searched.GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@index-score").GetSingle()).ToList();
        Assert.All(scores, s => Assert.True(s > 0));
        Assert.Equal(scores.OrderDescending(), scores);
        var best = searched.GetProperty("results")[0];
        var stored = await (await Http.GetAsync("docs/" + best.GetProperty("@metadata").GetProperty("@id").GetString())).JsonAsync();
        var unscored = System.Text.Json.Nodes.JsonNode.Parse(best.GetRawText())!;
        unscored["@metadata"]!.AsObject().Remove("@index-score");
        Assert.True(System.Text.Json.Nodes.JsonNode.DeepEquals(System.Text.Json.Nodes.JsonNode.Parse(stored.GetRawText()), unscored), unscored.ToJsonString());
        // A projection names its document as RavenDB's do (@id, @projection), and has no score unless ordered by one.
        var projected = top.GetProperty("results")[0].GetProperty("@metadata");
        Assert.Equal("posts/" + (string)expected[0].Attribute("Id")!, projected.GetProperty("@id").GetString());
        Assert.True(projected.GetProperty("@projection").GetBoolean());
        Assert.False(projected.TryGetProperty("@index-score", out _));
    }

    [Fact]
    public async Task From_collection_queries_run_on_an_automatic_index_that_later_queries_reuse()
    {
        var popular = await Query("from Posts where PostTypeId = 1 and Score >= 10 order by Score desc");
        var expected = fx.Posts.Where(p => (string)p.Attribute("PostTypeId")! == "1" && (long)p.Attribute("Score")! >= 10)
            .OrderByDescending(p => (long)p.Attribute("Score")!).ThenBy(p => "posts/" + (string)p.Attribute("Id")!, StringComparer.Ordinal)
            .Select(p => "posts/" + (string)p.Attribute("Id")!).ToList();
        Assert.NotEmpty(expected);
        Assert.Equal(expected, Ids(popular));
        Assert.False(popular.GetProperty("isStale").GetBoolean());

        // Fewer fields (or none): the same automatic index serves it.
        Assert.Equal(fx.Posts.Count(p => (long)p.Attribute("Score")! >= 10), (await Query("from Posts where Score >= 10")).GetProperty("totalResults").GetInt64());
        Assert.Equal(fx.Posts.Count, (await Query("from Posts")).GetProperty("totalResults").GetInt64());
        var searched = await Query("from Posts where search(Title, 'sources')");
        Assert.All(searched.GetProperty("results").EnumerateArray(), d => Assert.Contains("source", d.GetProperty("Title").GetString()!, StringComparison.OrdinalIgnoreCase));
        Assert.True(searched.GetProperty("totalResults").GetInt64() > 0);

        var autos = (await Http.GetFromJsonAsync<JsonElement>("indexes")).EnumerateArray().Select(i => i.GetProperty("name").GetString()!)
            .Where(n => n.StartsWith("Auto/Posts/", StringComparison.Ordinal)).Order(StringComparer.Ordinal).ToList();
        Assert.Equal(["Auto/Posts/ByPostTypeIdAndScore", "Auto/Posts/ByTitle_search"], autos);
    }

    [Fact]
    public async Task Cursor_pages_walk_the_same_results_as_one_big_page_and_the_stream_has_them_all()
    {
        const string rql = "from index 'Posts/ByTags' where exists(Tags) order by CreationDate";
        var all = Ids(await Query(rql));
        var paged = new List<string>();
        string? cursor = null;
        do
        {
            var page = await Query(rql, pageSize: 100, cursor: cursor);
            paged.AddRange(Ids(page));
            cursor = page.GetProperty("nextCursor").GetString();
        } while (cursor is not null);
        Assert.Equal(all, paged);

        var stream = await Http.PostAsJsonAsync("streams/queries", new { query = rql });
        Assert.Equal("application/x-ndjson", stream.Content.Headers.ContentType?.MediaType);
        Assert.Equal("false", stream.Headers.GetValues("Magpie-Is-Stale").Single());
        var lines = (await stream.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(all, lines.Select(l => JsonDocument.Parse(l).RootElement.GetProperty("@metadata").GetProperty("@id").GetString()!));
    }

    [Fact]
    public async Task A_stream_over_an_index_still_building_says_it_is_stale_and_waits_when_asked()
    {
        var put = await Http.PutAsync("indexes/Posts/StreamedWhileBuilding", HttpJson.Json(ImportedSampleFixture.Index));
        Assert.True(put.IsSuccessStatusCode, await put.Content.ReadAsStringAsync());
        var early = await Http.PostAsJsonAsync("streams/queries", new { query = "from index 'Posts/StreamedWhileBuilding'" });
        Assert.Equal(HttpStatusCode.OK, early.StatusCode);
        Assert.Equal("true", early.Headers.GetValues("Magpie-Is-Stale").Single());
        var earlyRows = (await early.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Length;
        Assert.True(earlyRows < fx.Posts.Count, $"{earlyRows} rows from an index that was still building");

        var waited = await Http.PostAsJsonAsync("streams/queries", new { query = "from index 'Posts/StreamedWhileBuilding'", waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.Equal("false", waited.Headers.GetValues("Magpie-Is-Stale").Single());
        Assert.Equal(fx.Posts.Count, (await waited.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Length);
    }

    [Fact]
    public async Task Writes_become_visible_to_queries_that_wait_for_non_stale_results()
    {
        var put = await Http.PutAsync("posts/900001", """{"Title":"Zebra crossings","Tags":"<zebra-test>","Score":1,"PostTypeId":1}""");
        Assert.True(put.IsSuccessStatusCode);
        Assert.Equal(["posts/900001"], Ids(await Query("from index 'Posts/ByTags' where Tags = 'zebra-test'")));
        await Http.PutAsync("posts/900001", """{"Title":"Zebra crossings","Tags":"<other>","Score":1,"PostTypeId":1}""");
        Assert.Empty(Ids(await Query("from index 'Posts/ByTags' where Tags = 'zebra-test'")));
        await Http.DeleteAsync("posts/900001", null);
        Assert.Empty(Ids(await Query("from index 'Posts/ByTags' where Tags = 'other' and search(Title, 'zebra')")));

        // Read-your-writes on the write itself: once it answers, a query that doesn't wait sees it.
        var waited = await Http.PutAsync("docs/posts/900002?waitForIndexes=true", HttpJson.Json("""{"Title":"Okapi","Tags":"<okapi-test>","Score":2,"PostTypeId":1}"""));
        Assert.Equal("current", waited.Headers.GetValues("Magpie-Indexes").Single());
        var noWait = await Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByTags' where Tags = 'okapi-test'" });
        Assert.Equal(["posts/900002"], Ids(await noWait.JsonAsync()));
        Assert.Equal("current", (await Http.DeleteAsync("docs/posts/900002?waitForIndexes=true")).Headers.GetValues("Magpie-Indexes").Single());

        var status = await Http.GetFromJsonAsync<JsonElement>("indexes/Posts/ByTags");
        Assert.False(status.GetProperty("status").GetProperty("isStale").GetBoolean());
        Assert.Equal(fx.Posts.Count, status.GetProperty("status").GetProperty("entries").GetInt64());
        var stats = await Http.GetFromJsonAsync<JsonElement>("indexes/Posts/ByTags/stats");
        Assert.True(stats.GetProperty("batches").GetInt64() > 0);
        Assert.True(stats.GetProperty("recentBatches")[0].TryGetProperty("commitMs", out _));
        // Every write above became searchable through a refresh, counted with its time.
        Assert.True(stats.GetProperty("refreshes").GetInt64() > 0);
        Assert.True(stats.GetProperty("refreshMs").GetDouble() > 0);
        var known = stats.GetProperty("knownIds");   // the index's filter of the ids it holds: filled, within its bound
        Assert.InRange(known.GetProperty("bytes").GetInt64(), 1, 128L << 20);
        Assert.Equal(0, known.GetProperty("shardsFull").GetInt32());
    }

    [Fact]
    public async Task Bad_definitions_and_bad_queries_get_problems_that_say_what_and_where()
    {
        async Task<JsonElement> Problem(HttpResponseMessage r, HttpStatusCode status)
        {
            Assert.Equal(status, r.StatusCode);
            Assert.Equal("application/problem+json", r.Content.Headers.ContentType?.MediaType);
            return await r.JsonAsync();
        }
        var syntax = await Problem(await Http.PutAsync("indexes/Bad", HttpJson.Json("""{"maps":["map('Posts', p => ({\n  A: p.A,,\n}))"]}""")), HttpStatusCode.BadRequest);
        Assert.Equal(2, syntax.GetProperty("line").GetInt32());
        Assert.Contains("maps[0]", syntax.GetProperty("detail").GetString());
        Assert.Contains("reduce", (await Problem(await Http.PutAsync("indexes/Bad", HttpJson.Json("""{"maps":["map('Posts', p => ({ A: 1 }))"],"reduce":"groupBy(x => x.A)"}""")), HttpStatusCode.BadRequest)).GetProperty("detail").GetString());
        Assert.Contains("indexing", (await Problem(await Http.PutAsync("indexes/Bad", HttpJson.Json("""{"maps":["map('Posts', p => ({ A: 1 }))"],"fields":{"A":{"indexing":"fuzzy"}}}""")), HttpStatusCode.BadRequest)).GetProperty("detail").GetString());

        var rql = await Problem(await Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByTags' where Score >" }), HttpStatusCode.BadRequest);
        Assert.Equal((1, 40), (rql.GetProperty("line").GetInt32(), rql.GetProperty("column").GetInt32()));
        await Problem(await Http.PostAsJsonAsync("queries", new { query = "from index 'Nope'" }), HttpStatusCode.NotFound);
        await Problem(await Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByTags'", cursor = "!!" }), HttpStatusCode.BadRequest);
        await Problem(await Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByTags' where Score = $nope" }), HttpStatusCode.BadRequest);
        Assert.Contains("can't be indexed automatically", (await Problem(await Http.PostAsJsonAsync("queries", new { query = "from Posts where Owner/Name = 1" }), HttpStatusCode.BadRequest)).GetProperty("detail").GetString());
        await Problem(await Http.GetAsync("indexes/Nope"), HttpStatusCode.NotFound);
    }
}
