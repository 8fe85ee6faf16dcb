using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Http;

/// <summary>
/// What a hostile or careless client sends, over HTTP to the real executable: each input is refused with a problem body
/// or fails only itself, nothing stored is unservable, and the process and other indexes go on.
/// </summary>
public sealed class HostileInputTests(MagpieFixture fixture) : IClassFixture<MagpieFixture>
{
    private HttpClient Http => fixture.Magpie.Http;
    private static string NewId(string collection = "hostile") => $"{collection}/{Guid.NewGuid():N}";

    private static ByteArrayContent Bytes(byte[] body) => new(body) { Headers = { ContentType = new("application/json") } };

    private static byte[] Utf8WithBadBytes() => [.. "{\"a\":\"x"u8, 0xff, 0xfe, .. "\"}"u8];

    [Fact]
    public async Task Text_that_cannot_be_served_back_is_refused_on_every_write_path()
    {
        var lone = """{"a":"\ud800"}""";
        var loneName = """{"\udc00":1}""";
        var id = NewId();
        await HttpJson.AssertProblem(await Http.PutAsync(id, lone), HttpStatusCode.BadRequest, "lone surrogate");
        await HttpJson.AssertProblem(await Http.PutAsync(id, loneName), HttpStatusCode.BadRequest, "property name");
        await HttpJson.AssertProblem(await Http.PutAsync($"docs/{id}", Bytes(Utf8WithBadBytes())), HttpStatusCode.BadRequest, "not valid UTF-8");
        // CESU-style UTF-8 of a surrogate (ED A0 80) is not UTF-8 either.
        await HttpJson.AssertProblem(await Http.PutAsync($"docs/{id}", Bytes([.. "{\"a\":\""u8, 0xED, 0xA0, 0x80, .. "\"}"u8])), HttpStatusCode.BadRequest, "not valid UTF-8");
        await HttpJson.AssertProblem(await Http.BulkAsync($$"""[{"method":"PUT","id":"{{id}}","document":{{lone}}}]"""), HttpStatusCode.BadRequest, "lone surrogate");
        Assert.Equal(HttpStatusCode.NotFound, (await Http.GetAsync($"docs/{id}")).StatusCode);

        // PATCH: the result is checked, the stored version stays.
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(id, """{"a":"ok"}""")).StatusCode);
        await HttpJson.AssertProblem(await Http.PatchAsync(id, """[{"op":"add","path":"/b","value":"\udfff"}]"""), HttpStatusCode.BadRequest, "lone surrogate");
        var stored = await Http.GetAsync($"docs/{id}");
        Assert.Equal(HttpStatusCode.OK, stored.StatusCode);
        var doc = await stored.JsonAsync();
        Assert.Equal("ok", doc.GetProperty("a").GetString());
        Assert.False(doc.TryGetProperty("b", out _));

        // A pair is text: it comes back as written, escapes included.
        var pair = NewId();
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(pair, """{"e":"\ud83d\ude00","raw":"😀"}""")).StatusCode);
        var text = await (await Http.GetAsync($"docs/{pair}")).Content.ReadAsStringAsync();
        Assert.Contains("""\ud83d\ude00""", text);
        Assert.Equal("😀", JsonDocument.Parse(text).RootElement.GetProperty("raw").GetString());

        // Browsing the collection is valid JSON throughout.
        var browse = await Http.GetAsync("docs?collection=hostile&pageSize=1024");
        Assert.Equal(HttpStatusCode.OK, browse.StatusCode);
        JsonDocument.Parse(await browse.Content.ReadAsStringAsync()).Dispose();
    }

    [Fact]
    public async Task A_patch_bomb_is_refused_under_a_memory_bound_and_the_process_goes_on()
    {
        // The probe's crash, with the default 16 MB document limit and a 1 GB heap: 40 copies of an array into itself.
        await using var magpie = await MagpieProcess.StartAsync(environment: new() { ["DOTNET_GCHeapHardLimit"] = "0x40000000" });
        var strings = string.Join(",", Enumerable.Range(0, 1000).Select(i => $"\"string number {i}\""));
        Assert.Equal(HttpStatusCode.Created, (await magpie.Http.PutAsync("users/bomb", $$"""{"E":[{{strings}}]}""")).StatusCode);
        var copies = "[" + string.Join(",", Enumerable.Repeat("""{"op":"copy","from":"/E","path":"/E/-"}""", 40)) + "]";
        // Refused by the size check before the copy that would pass the limit, or, on a machine too loaded to reach it, by the
        // patch's 2 s budget: either bound names itself, and neither lets memory run away.
        var bomb = (await HttpJson.AssertProblem(await magpie.Http.PatchAsync("users/bomb", copies), HttpStatusCode.BadRequest, "")).GetProperty("detail").GetString()!;
        Assert.True(bomb.Contains("past the limit of 16777216 bytes") || bomb.Contains("ran longer than 2 s"), bomb);
        // Variants: an array copied into itself again and again, one large string copied to many members, more operations than allowed.
        await HttpJson.AssertProblem(await magpie.Http.PatchAsync("users/bomb", "[" + string.Join(",", Enumerable.Repeat("""{"op":"copy","from":"/E","path":"/F"}""", 3)) + "," +
            string.Join(",", Enumerable.Repeat("""{"op":"copy","from":"/F","path":"/F/-"}""", 70)) + "]"), HttpStatusCode.BadRequest, "");
        var big = new string('x', 1 << 20);
        await HttpJson.AssertProblem(await magpie.Http.PatchAsync("users/bomb", $$"""[{"op":"add","path":"/B0","value":"{{big}}"},""" +
            string.Join(",", Enumerable.Range(1, 16).Select(i => $$"""{"op":"copy","from":"/B0","path":"/B{{i}}"}""")) + "]"), HttpStatusCode.BadRequest, "past the limit");
        await HttpJson.AssertProblem(await magpie.Http.PatchAsync("users/bomb", "[" + string.Join(",", Enumerable.Repeat("""{"op":"test","path":"/E/0","value":"string number 0"}""", 10_001)) + "]"),
            HttpStatusCode.BadRequest, "at most 10000 operations");
        // Nothing was written; the process serves on, and a patch within the limits applies.
        var stored = await (await magpie.Http.GetAsync("docs/users/bomb")).JsonAsync();
        Assert.Equal(1000, stored.GetProperty("E").GetArrayLength());
        Assert.Equal(HttpStatusCode.OK, (await magpie.Http.PatchAsync("users/bomb", """[{"op":"copy","from":"/E","path":"/E/-"}]""")).StatusCode);
        Assert.Equal(1001, (await (await magpie.Http.GetAsync("docs/users/bomb")).JsonAsync()).GetProperty("E").GetArrayLength());
    }

    [Fact]
    public async Task A_non_ascii_id_is_stored_and_its_location_is_percent_encoded()
    {
        var created = await Http.PutAsync("docs/users/Jos%C3%A9", HttpJson.Json("""{"Name":"José"}"""));
        Assert.Equal(HttpStatusCode.Created, created.StatusCode);
        Assert.Equal("/docs/users/Jos%C3%A9", created.Headers.Location!.OriginalString);
        Assert.Equal("José", (await (await Http.GetAsync(created.Headers.Location.OriginalString.TrimStart('/'))).JsonAsync()).GetProperty("Name").GetString());
        // Characters a URL reserves, and a space, all come back as one path the server maps to the same id.
        var odd = await Http.PutAsync("docs/users/a%20b%3Fc%23d%25", HttpJson.Json("{}"));
        Assert.Equal(HttpStatusCode.Created, odd.StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await Http.GetAsync(odd.Headers.Location!.OriginalString.TrimStart('/'))).StatusCode);
    }

    [Fact]
    public async Task Every_response_serves_the_deepest_document_the_store_accepts()
    {
        // 64 levels is the store's limit; System.Text.Json's default writer depth (64) made such a document a 500 in every page.
        foreach (var depth in new[] { 62, 63, 64 })
        {
            var deep = "{\"Depth\":" + depth + ",\"a\":" + string.Concat(Enumerable.Repeat("{\"a\":", depth - 2)) + "{}" + new string('}', depth - 2) + "}";
            Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync($"deepest/{depth}", deep)).StatusCode);
        }
        var page = await Http.QueryNonStaleAsync("from deepest order by Depth");
        Assert.Equal([62.0, 63.0, 64.0], page.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("Depth").GetDouble()).ToList());
        Assert.Equal(HttpStatusCode.OK, (await Http.PostAsJsonAsync("queries", new { query = "from deepest select a" })).StatusCode);
        var stream = await Http.PostAsJsonAsync("streams/queries", new { query = "from deepest" });
        Assert.Equal(HttpStatusCode.OK, stream.StatusCode);
        Assert.Equal(3, (await stream.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Length);
        Assert.Equal(HttpStatusCode.OK, (await Http.GetAsync("docs?collection=deepest")).StatusCode);
    }

    [Fact]
    public async Task A_deep_document_patched_deeper_is_refused_and_still_served()
    {
        // The input: 61 levels, then a patch that adds 10 more; an index over the collection goes on indexing.
        await Http.PutIndexAsync("Hostile/Deep", """{ "maps": ["map('DeepDocs', d => ({ Top: d.top }))"] }""");
        var id = NewId("deepdocs");
        var deep = "{\"top\":\"yes\"," + string.Concat(Enumerable.Repeat("\"a\":{", 59)) + "\"a\":{}" + new string('}', 60);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(id, deep)).StatusCode);
        var path = string.Concat(Enumerable.Repeat("/a", 60)) + "/b";
        var ten = string.Concat(Enumerable.Repeat("{\"c\":", 9)) + "{}" + new string('}', 9);
        await HttpJson.AssertProblem(await Http.PatchAsync(id, $$"""[{"op":"add","path":"{{path}}","value":{{ten}}}]"""), HttpStatusCode.BadRequest, "deeper");
        // The same with metadata in the result (read for its collection only after the result passed its checks).
        await HttpJson.AssertProblem(await Http.PatchAsync(id, $$$"""[{"op":"add","path":"/@metadata","value":{"@collection":"DeepDocs"}},{"op":"add","path":"{{{path}}}","value":{{{ten}}}}]"""), HttpStatusCode.BadRequest, "deeper");
        var get = await Http.GetAsync($"docs/{id}");
        Assert.Equal(HttpStatusCode.OK, get.StatusCode);
        var body = await get.Content.ReadAsStringAsync();
        Assert.NotEmpty(body);
        JsonDocument.Parse(body, new JsonDocumentOptions { MaxDepth = 128 }).Dispose();
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(NewId("deepdocs"), """{"top":"later"}""")).StatusCode);
        var indexed = await Http.QueryNonStaleAsync("from index 'Hostile/Deep' order by Top");
        Assert.Equal(["later", "yes"], indexed.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("top").GetString()).ToList());
    }

    [Fact]
    public async Task Entries_an_index_cannot_hold_fail_their_document_visibly_and_other_indexes_index_everything()
    {
        await Http.PutIndexAsync("Hostile/Refusing", """{ "maps": ["map('Refusals', d => d.Evil ? { '@id': 'x', Tag: d.Tag } : { Tag: d.Tag, Code: d.Code })"] }""");
        await Http.PutIndexAsync("Hostile/Plain", """{ "maps": ["map('Refusals', d => ({ Tag: d.Tag }))"] }""");
        var started = DateTimeOffset.UtcNow;
        var bulk = await Http.BulkPutAsync(
        [
            ("refusals/evil", """{"Evil":true,"Tag":"evil"}"""),
            ("refusals/immense", $$"""{"Tag":"immense","Code":"{{new string('x', 40_000)}}"}"""),
            ("refusals/fine", """{"Tag":"fine","Code":"ok"}"""),
        ]);
        Assert.Equal(HttpStatusCode.OK, bulk.StatusCode);

        var refusing = await Http.QueryNonStaleAsync("from index 'Hostile/Refusing'");
        Assert.Equal(["fine"], refusing.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("Tag").GetString()).ToList());
        var plain = await Http.QueryNonStaleAsync("from index 'Hostile/Plain' order by Tag");
        Assert.Equal(["evil", "fine", "immense"], plain.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("Tag").GetString()).ToList());

        var status = (await (await Http.GetAsync("indexes/Hostile/Refusing")).JsonAsync()).GetProperty("status");
        Assert.Equal("running", status.GetProperty("state").GetString());
        Assert.Equal(2, status.GetProperty("errorCount").GetInt64());
        var errors = status.GetProperty("errors").EnumerateArray().ToDictionary(e => e.GetProperty("documentId").GetString()!);
        Assert.Contains("reserved", errors["refusals/evil"].GetProperty("message").GetString());
        Assert.Contains("40,000-byte value", errors["refusals/immense"].GetProperty("message").GetString());
        Assert.True(errors["refusals/immense"].GetProperty("at").GetDateTimeOffset() >= started.AddSeconds(-1));
        Assert.Equal(0, (await (await Http.GetAsync("indexes/Hostile/Plain")).JsonAsync()).GetProperty("status").GetProperty("errorCount").GetInt64());

        // errorCount counts documents, not their failed versions: the same document failing again is still one, listed once
        // with its latest error; fixed, it leaves the list.
        var firstAt = errors["refusals/evil"].GetProperty("at").GetDateTimeOffset();
        Assert.Equal(HttpStatusCode.OK, (await Http.PutAsync("refusals/evil", """{"Evil":true,"Tag":"evil again"}""")).StatusCode);
        await Http.QueryNonStaleAsync("from index 'Hostile/Refusing'");
        status = (await (await Http.GetAsync("indexes/Hostile/Refusing")).JsonAsync()).GetProperty("status");
        Assert.Equal(2, status.GetProperty("errorCount").GetInt64());
        Assert.True(Assert.Single(status.GetProperty("errors").EnumerateArray(), e => e.GetProperty("documentId").GetString() == "refusals/evil")
            .GetProperty("at").GetDateTimeOffset() > firstAt);
        Assert.Equal(HttpStatusCode.OK, (await Http.PutAsync("refusals/evil", """{"Tag":"evil no more"}""")).StatusCode);
        await Http.QueryNonStaleAsync("from index 'Hostile/Refusing'");
        status = (await (await Http.GetAsync("indexes/Hostile/Refusing")).JsonAsync()).GetProperty("status");
        Assert.Equal(1, status.GetProperty("errorCount").GetInt64());
    }

    [Fact]
    public async Task A_document_whose_keys_a_map_copies_cannot_stop_the_index()
    {
        // The probe's: a map copying a user's object keys, and one document with a 40,000-character key (its @exists term was over
        // Lucene's limit: the index errored, stuck at that etag, while /readyz said ready); and one with 20,000 keys.
        await Http.PutIndexAsync("Hostile/CopiedKeys", """{ "maps": ["map('Attrs', d => Object.assign({ N: d.N }, d.Attrs))"] }""");
        var wide = "{" + string.Join(",", Enumerable.Range(0, 20_000).Select(i => $"\"k{i}\":1")) + "}";
        var bulk = await Http.BulkPutAsync(
        [
            ("attrs/1", """{"N":"one","Attrs":{"Color":"red"}}"""),
            ("attrs/long", "{\"N\":\"long\",\"Attrs\":{\"" + new string('k', 40_000) + "\":1}}"),
            ("attrs/wide", $$"""{"N":"wide","Attrs":{{wide}}}"""),
            ("attrs/2", """{"N":"two","Attrs":{"Color":"blue"}}"""),
        ]);
        Assert.Equal(HttpStatusCode.OK, bulk.StatusCode);
        var page = await Http.QueryNonStaleAsync("from index 'Hostile/CopiedKeys' order by N");
        Assert.Equal(["one", "two"], page.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("N").GetString()).ToList());
        var status = (await (await Http.GetAsync("indexes/Hostile/CopiedKeys")).JsonAsync()).GetProperty("status");
        Assert.Equal("running", status.GetProperty("state").GetString());
        var errors = status.GetProperty("errors").EnumerateArray().ToDictionary(e => e.GetProperty("documentId").GetString()!, e => e.GetProperty("message").GetString()!);
        Assert.Contains("field name of 40,000 characters", errors["attrs/long"]);
        Assert.Contains("more than 10,000 fields", errors["attrs/wide"]);
        // The index goes on past them.
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("attrs/3", """{"N":"three","Attrs":{}}""")).StatusCode);
        Assert.Equal(3, (await Http.QueryNonStaleAsync("from index 'Hostile/CopiedKeys'")).GetProperty("totalResults").GetInt32());
    }

    [Fact]
    public async Task A_document_with_a_million_values_fails_itself_without_taking_gigabytes()
    {
        // The probe's: one 9.9 MB document, an array of a million strings mapped to a field, took 5.9 GB and 42 s to index.
        await using var magpie = await MagpieProcess.StartAsync();   // the shared one takes smaller bodies
        var Http = magpie.Http;
        await Http.PutIndexAsync("Hostile/Million", """{ "maps": ["map('Millions', d => ({ Tags: d.Tags, N: d.N }))"] }""");
        var million = "{\"N\":\"huge\",\"Tags\":[" + string.Join(",", Enumerable.Range(0, 1_000_000).Select(i => $"\"t{i}\"")) + "]}";
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("millions/huge", million)).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("millions/small", """{"N":"small","Tags":["a","b"]}""")).StatusCode);
        var rssBefore = Rss(magpie.Pid);
        var page = await Http.QueryNonStaleAsync("from index 'Hostile/Million' where Tags = 'a'");
        Assert.Equal(["small"], page.GetProperty("results").EnumerateArray().Select(r => r.GetProperty("N").GetString()).ToList());
        var status = (await (await Http.GetAsync("indexes/Hostile/Million")).JsonAsync()).GetProperty("status");
        var error = Assert.Single(status.GetProperty("errors").EnumerateArray());
        Assert.Equal("millions/huge", error.GetProperty("documentId").GetString());
        Assert.Contains("more than 100,000 index values", error.GetProperty("message").GetString());
        // Not a benchmark: a bound an order of magnitude under what the probe saw.
        Assert.True(Rss(magpie.Pid) - rssBefore < 1_500L << 20, $"RSS grew from {rssBefore >> 20} MB to {Rss(magpie.Pid) >> 20} MB");
    }

    [Fact]
    public async Task A_number_beyond_a_double_is_refused_on_every_write_path_naming_where_it_is()
    {
        var id = NewId("numbers");
        await HttpJson.AssertProblem(await Http.PutAsync(id, """{"A":[{"V":1},{"V":1e400}]}"""), HttpStatusCode.BadRequest, "the number 1e400 at /A/1/V is beyond the range of a double");
        await HttpJson.AssertProblem(await Http.BulkAsync($$$"""[{"method":"PUT","id":"{{{id}}}","document":{"W":-2E+999}}]"""), HttpStatusCode.BadRequest, "the number -2E+999 at /W");
        await HttpJson.AssertProblem(await Http.PutAsync(id, "{\"Big\":" + new string('9', 400) + "}"), HttpStatusCode.BadRequest, "at /Big is beyond the range");
        // The largest doubles, the smallest, and text that only looks like an exponent, are documents like any other.
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(id, """{"Max":1.7976931348623157e308,"Tiny":4.9e-324,"Under":1e-400,"Text":"Ice100 e+999"}""")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await Http.BulkAsync($$$"""[{"method":"PUT","id":"{{{id}}}","document":{"Max":-1.7976931348623157E+308,"Text":"e999"}}]""")).StatusCode);
        await HttpJson.AssertProblem(await Http.PatchAsync(id, """[{"op":"add","path":"/X","value":1e309}]"""), HttpStatusCode.BadRequest, "beyond the range of a double");
        Assert.Equal(-1.7976931348623157E+308, (await Http.GetFromJsonAsync<JsonElement>($"docs/{id}")).GetProperty("Max").GetDouble());
    }

    [Fact]
    public async Task Minus_zero_is_zero_in_every_comparison_over_http_and_postgresql()
    {
        var bulk = await Http.BulkPutAsync([("zeros/plus", """{"V":0,"K":"z"}"""), ("zeros/minus", """{"V":-0,"K":"z"}"""), ("zeros/minus-float", """{"V":-0.0,"K":"z"}"""), ("zeros/one", """{"V":1,"K":"z"}""")]);
        Assert.Equal(HttpStatusCode.OK, bulk.StatusCode);
        async Task<List<string>> Ids(string rql) => (await Http.QueryNonStaleAsync(rql)).GetProperty("results").EnumerateArray()
            .Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()!).Order(StringComparer.Ordinal).ToList();
        List<string> zeros = ["zeros/minus", "zeros/minus-float", "zeros/plus"];
        Assert.Equal(zeros, await Ids("from zeros where V = 0"));
        Assert.Equal(zeros, await Ids("from zeros where V = -0"));
        Assert.Equal(zeros, await Ids("from zeros where V in (0)"));
        Assert.Equal(["zeros/minus", "zeros/minus-float", "zeros/one", "zeros/plus"], await Ids("from zeros where V >= 0"));
        Assert.Equal(zeros, await Ids("from zeros where V <= 0"));
        Assert.Empty(await Ids("from zeros where V < 0"));
        Assert.Equal(["zeros/one"], await Ids("from zeros where V > 0"));
        await Http.PutIndexAsync("Zeros/ByV", """{ "maps": ["map('zeros', z => ({ V: z.V }))"] }""");
        await Http.QueryNonStaleAsync("from index 'Zeros/ByV'");
        var psql = await Postgres.PostgresEndpointTests.PsqlAsync(fixture.Magpie.PgPort, "select count(*) from \"Zeros/ByV\" where \"V\" = 0");
        Assert.True(psql.Exit == 0, psql.Error);
        Assert.Equal("3", psql.Output.Trim());
    }

    private static long Rss(int pid) =>
        long.Parse(File.ReadAllLines($"/proc/{pid}/status").First(l => l.StartsWith("VmRSS:")).Split(' ', StringSplitOptions.RemoveEmptyEntries)[1]) * 1024;

    [Fact]
    public async Task A_deleted_document_is_never_an_index_error_even_for_an_index_defined_after_it()
    {
        const string map = """{ "maps": ["map('Fragile', d => { if (d.Bad) throw new Error('bad ' + d.N); return { N: d.N }; })"] }""";
        await Http.PutIndexAsync("Hostile/FragileBefore", map);
        Assert.Equal(HttpStatusCode.OK, (await Http.BulkPutAsync([("fragile/1", """{"N":1,"Bad":true}"""), ("fragile/2", """{"N":2}""")])).StatusCode);
        await Http.QueryNonStaleAsync("from index 'Hostile/FragileBefore'");
        var before = (await (await Http.GetAsync("indexes/Hostile/FragileBefore")).JsonAsync()).GetProperty("status");
        Assert.Equal(1, before.GetProperty("errorCount").GetInt64());
        // Deleted: the error goes with it.
        Assert.Equal(HttpStatusCode.NoContent, (await Http.DeleteAsync("docs/fragile/1")).StatusCode);
        await Http.QueryNonStaleAsync("from index 'Hostile/FragileBefore'");
        before = (await (await Http.GetAsync("indexes/Hostile/FragileBefore")).JsonAsync()).GetProperty("status");
        Assert.Equal(0, before.GetProperty("errorCount").GetInt64());
        Assert.Equal(0, before.GetProperty("errors").GetArrayLength());
        // An index defined afterwards reads the history, and reports nothing for a document that no longer exists.
        await Http.PutIndexAsync("Hostile/FragileAfter", map);
        var page = await Http.QueryNonStaleAsync("from index 'Hostile/FragileAfter'");
        Assert.Equal(1, page.GetProperty("totalResults").GetInt32());
        var after = (await (await Http.GetAsync("indexes/Hostile/FragileAfter")).JsonAsync()).GetProperty("status");
        Assert.Equal(0, after.GetProperty("errorCount").GetInt64());
    }

    [Fact]
    public async Task A_reduce_output_document_over_the_size_limit_fails_its_key_and_the_others_are_written()
    {
        await Http.PutIndexAsync("Hostile/Blobs", """
            {
              "maps": ["map('Blobs', b => ({ Group: b.Group, Text: b.Text }))"],
              "reduce": "groupBy(x => x.Group).aggregate(g => ({ Group: g.key, Text: g.values.map(v => v.Text).join('') }))",
              "outputReduceToCollection": "BlobGroups",
              "fields": { "Text": { "indexing": "no" } }
            }
            """);
        // Four parts of 300 KB in group "big" make a 1.2 MB result, over this server's 1 MB document limit.
        var part = new string('x', 300_000);
        foreach (var i in Enumerable.Range(0, 4))
            Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync($"blobs/big{i}", $$"""{"Group":"big","Text":"{{part}}"}""")).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("blobs/small", """{"Group":"small","Text":"abc"}""")).StatusCode);

        await Http.QueryNonStaleAsync("from index 'Hostile/Blobs'");
        Assert.Equal("abc", (await (await Http.GetAsync("docs/BlobGroups/small")).JsonAsync()).GetProperty("Text").GetString());
        Assert.Equal(HttpStatusCode.NotFound, (await Http.GetAsync("docs/BlobGroups/big")).StatusCode);
        var status = (await (await Http.GetAsync("indexes/Hostile/Blobs")).JsonAsync()).GetProperty("status");
        Assert.Equal("running", status.GetProperty("state").GetString());
        // Each time the key is reduced (as parts arrive, in one batch or several) its result is refused again: only that key.
        Assert.All(status.GetProperty("errors").EnumerateArray(), error =>
        {
            Assert.Equal("reduce key \"big\"", error.GetProperty("documentId").GetString());
            Assert.Contains("over the limit", error.GetProperty("message").GetString());
        });
        Assert.True(status.GetProperty("errorCount").GetInt64() >= 1);
    }

    [Fact]
    public async Task A_web_page_cannot_write_cross_origin_but_an_allowed_origin_and_non_browser_clients_can()
    {
        // The probe: a cross-origin text/plain POST /bulk_docs (no CORS preflight in a browser) deleting a document.
        var id = NewId();
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(id, "{}")).StatusCode);
        HttpRequestMessage Delete(string? origin, string contentType = "application/json")
        {
            var request = new HttpRequestMessage(HttpMethod.Post, "bulk_docs") { Content = new StringContent($$"""[{"method":"DELETE","id":"{{id}}"}]""", Encoding.UTF8, contentType) };
            if (origin is not null) request.Headers.Add("Origin", origin);
            return request;
        }
        await HttpJson.AssertProblem(await Http.SendAsync(Delete("https://evil.example", "text/plain")), HttpStatusCode.Forbidden, "https://evil.example");
        await HttpJson.AssertProblem(await Http.SendAsync(Delete("https://evil.example")), HttpStatusCode.Forbidden, "https://evil.example");
        // A body that is not declared JSON is refused whoever sends it: that is what a page can send without a preflight.
        await HttpJson.AssertProblem(await Http.SendAsync(Delete(null, "text/plain")), HttpStatusCode.UnsupportedMediaType, "application/json");
        await HttpJson.AssertProblem(await Http.PutAsync($"docs/{id}", new StringContent("{}", Encoding.UTF8, "application/x-www-form-urlencoded")),
            HttpStatusCode.UnsupportedMediaType, "application/x-www-form-urlencoded");
        Assert.Equal(HttpStatusCode.OK, (await Http.GetAsync($"docs/{id}")).StatusCode);
        var read = new HttpRequestMessage(HttpMethod.Get, $"docs/{id}") { Headers = { { "Origin", "https://evil.example" } } };
        Assert.Equal(HttpStatusCode.OK, (await Http.SendAsync(read)).StatusCode);

        await using var allowing = await MagpieProcess.StartAsync(environment: new() { ["MAGPIE__ALLOWEDORIGINS__0"] = "https://app.example" });
        Assert.Equal(HttpStatusCode.Created, (await allowing.Http.PutAsync(id, "{}")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await allowing.Http.SendAsync(Delete("https://app.example"))).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await allowing.Http.GetAsync($"docs/{id}")).StatusCode);
        // Its own origin (a page Magpie served) may write too; JSON Patch is JSON.
        Assert.Equal(HttpStatusCode.Created, (await allowing.Http.PutAsync(id, "{}")).StatusCode);
        var patch = new HttpRequestMessage(HttpMethod.Patch, $"docs/{id}") { Content = new StringContent("""[{"op":"add","path":"/a","value":1}]""", Encoding.UTF8, "application/json-patch+json") };
        Assert.Equal(HttpStatusCode.OK, (await allowing.Http.SendAsync(patch)).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await allowing.Http.SendAsync(Delete(allowing.BaseUrl.ToString().TrimEnd('/')))).StatusCode);
    }

    [Fact]
    public async Task Connection_secrets_never_come_back_from_a_get_and_their_file_is_the_owners_alone()
    {
        // The shapes: Kafka SASL and SSL key passwords, a JAAS config, a RabbitMQ password with a space.
        var kafka = await Http.PutAsJsonAsync("etl/connections/secret-kafka", new
        {
            type = "kafka", bootstrapServers = "localhost:1",
            options = new Dictionary<string, string>
            {
                ["sasl.password"] = "s3cret-sasl", ["ssl.key.password"] = "s3cret-key", ["sasl.jaas.config"] = "x password=\"s3cret-jaas\";", ["acks"] = "all",
                // The probe's: secrets under names no list foresaw.
                ["sasl.oauthbearer.config"] = "principal=me clientSecret=s3cret-oauth", ["ssl.keystore.location"] = "/s3cret/path",
            },
        });
        Assert.True(kafka.IsSuccessStatusCode, await kafka.Content.ReadAsStringAsync());
        var rabbit = await Http.PutAsJsonAsync("etl/connections/secret-rabbit", new { type = "rabbitmq", url = "amqp://magpie:s3cret word@localhost:5672/vh" });
        Assert.True(rabbit.IsSuccessStatusCode, await rabbit.Content.ReadAsStringAsync());
        var query = await Http.PutAsJsonAsync("etl/connections/secret-query", new { type = "rabbitmq", url = "amqp://localhost:5672/vh?heartbeat=10&password=s3cret-query" });
        Assert.True(query.IsSuccessStatusCode, await query.Content.ReadAsStringAsync());

        foreach (var path in new[] { "etl/connections", "etl/connections/secret-kafka", "etl/connections/secret-rabbit", "etl/connections/secret-query" })
        {
            var shown = await Http.GetStringAsync(path);
            Assert.DoesNotContain("s3cret", shown);
        }
        var one = await Http.GetFromJsonAsync<JsonElement>("etl/connections/secret-kafka");
        // One rule: the names come back, no value does.
        Assert.All(one.GetProperty("options").EnumerateObject(), o => Assert.Equal("***", o.Value.GetString()));
        Assert.Equal("amqp://localhost:5672/vh?heartbeat=***&password=***", (await Http.GetFromJsonAsync<JsonElement>("etl/connections/secret-query")).GetProperty("url").GetString());
        Assert.Equal("amqp://magpie:***@localhost:5672/vh", (await Http.GetFromJsonAsync<JsonElement>("etl/connections/secret-rabbit")).GetProperty("url").GetString());

        var file = Path.Combine(fixture.Magpie.DataDir, "etl", "config.json");
        if (!OperatingSystem.IsWindows()) Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(file));
        Assert.DoesNotContain(fixture.Magpie.Output, line => line.Contains("s3cret"));
    }

    [Theory]
    [InlineData("GET", "docs?pageSize=abc", 400, "pageSize")]
    [InlineData("GET", "no/such/thing", 404, "no resource at GET /no/such/thing")]
    [InlineData("DELETE", "stats", 405, "DELETE is not allowed on /stats")]
    public async Task Framework_level_client_errors_have_problem_bodies(string method, string path, int status, string detail)
    {
        await HttpJson.AssertProblem(await Http.SendAsync(new HttpRequestMessage(new HttpMethod(method), path)), (HttpStatusCode)status, detail);
    }

    [Theory]
    // What Kestrel refuses before any middleware runs (it answered these without a body): a request line or headers over its
    // limits, a malformed request line or header, headers that never finish.
    [InlineData("url", 414, "request line is longer than 8,192 bytes")]
    [InlineData("headers", 431, "request headers are larger than 32,768 bytes")]
    [InlineData("request-line", 400, "not valid HTTP/1.1")]
    [InlineData("header-line", 400, "not valid HTTP/1.1")]
    [InlineData("pipelined", 400, "not valid HTTP/1.1")]
    [InlineData("slow-headers", 408, "did not arrive within 10 s")]
    public async Task Requests_kestrel_refuses_itself_get_problem_bodies_too(string shape, int status, string detail)
    {
        var request = shape switch
        {
            "url" => $"GET /docs/{new string('a', 10_000)} HTTP/1.1\r\nHost: x\r\n\r\n",
            "headers" => $"GET /stats HTTP/1.1\r\nHost: x\r\nX-Big: {new string('a', 40_000)}\r\n\r\n",
            "request-line" => "GET /stats HTTP/1.1 extra\r\nHost: x\r\n\r\n",
            "header-line" => "GET /stats HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
            "pipelined" => "GET /stats HTTP/1.1\r\nHost: x\r\n\r\nGET /stats HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
            _ => "GET /stats HTTP/1.1\r\nHost: x\r\n",
        };
        var uri = Http.BaseAddress!;
        using var tcp = new System.Net.Sockets.TcpClient();
        await tcp.ConnectAsync(uri.Host, uri.Port);
        var stream = tcp.GetStream();
        await stream.WriteAsync(Encoding.ASCII.GetBytes(request));
        var response = await new StreamReader(stream).ReadToEndAsync().WaitAsync(TimeSpan.FromSeconds(60));
        // A pipelined good request before the bad one is answered as usual first.
        if (shape == "pipelined")
        {
            Assert.StartsWith("HTTP/1.1 200", response);
            response = response[response.IndexOf("HTTP/1.1 4", StringComparison.Ordinal)..];
        }
        Assert.StartsWith($"HTTP/1.1 {status}", response);
        Assert.Contains("Content-Type: application/problem+json", response);
        var problem = JsonDocument.Parse(response[(response.IndexOf("\r\n\r\n", StringComparison.Ordinal) + 4)..]).RootElement;
        Assert.Equal(status, problem.GetProperty("status").GetInt32());
        Assert.Contains(detail, problem.GetProperty("detail").GetString());
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(NewId(), "{}")).StatusCode);
    }

    [Theory]
    // A body that stops short of its Content-Length (Kestrel gives up once it arrives too slowly: 408), and a chunk size that is not hex.
    [InlineData("Content-Length: 100\r\n\r\n{\"a\":1}", 408, "data arriving too slowly")]
    [InlineData("Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400, "chunk")]
    // A chunk size past Kestrel's arithmetic (an overflow, which Kestrel reports as an IOException rather than a bad request).
    [InlineData("Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n{}\r\n0\r\n\r\n", 400, "chunk")]
    public async Task Short_or_broken_bodies_are_4xx_with_a_problem_body_and_the_server_goes_on(string rest, int status, string detail)
    {
        var uri = Http.BaseAddress!;
        using var tcp = new System.Net.Sockets.TcpClient();
        await tcp.ConnectAsync(uri.Host, uri.Port);
        var stream = tcp.GetStream();
        await stream.WriteAsync(Encoding.ASCII.GetBytes($"PUT /docs/{NewId()} HTTP/1.1\r\nHost: {uri.Authority}\r\nContent-Type: application/json\r\n{rest}"));
        var response = await new StreamReader(stream).ReadToEndAsync().WaitAsync(TimeSpan.FromSeconds(60));
        Assert.StartsWith($"HTTP/1.1 {status}", response);
        Assert.Contains("application/problem+json", response);
        Assert.Contains(detail, response, StringComparison.OrdinalIgnoreCase);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(NewId(), "{}")).StatusCode);
    }
}
