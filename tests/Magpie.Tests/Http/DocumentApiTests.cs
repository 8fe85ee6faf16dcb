using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Http;

/// <summary>Every endpoint of the write/read API and its errors, against the real executable over HTTP.</summary>
public sealed class DocumentApiTests(MagpieFixture fixture) : IClassFixture<MagpieFixture>
{
    private HttpClient Http => fixture.Magpie.Http;
    private static string NewId(string collection = "people") => $"{collection}/{Guid.NewGuid():N}";

    [Fact]
    public async Task Ids_compare_case_insensitively_in_reads_writes_queries_includes_and_loads()
    {
        // RavenDB's rule: an id is kept as first written and matched in any case, wherever an id is read.
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("Firms/CaseCo", """{"Name":"Case Co"}""")).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("caseorders/1", """{"Firm":"FIRMS/caseco"}""")).StatusCode);
        var read = await (await Http.GetAsync("docs/firms/CASECO")).JsonAsync();
        Assert.Equal("Firms/CaseCo", read.GetProperty("@metadata").GetProperty("@id").GetString());

        var loaded = await Http.QueryNonStaleAsync("from caseorders as o load o.Firm as f select { Name: f.Name }");
        Assert.Equal("Case Co", loaded.GetProperty("results")[0].GetProperty("Name").GetString());
        var included = await Http.QueryNonStaleAsync("from caseorders include Firm");
        Assert.Equal("Case Co", included.GetProperty("includes").GetProperty("FIRMS/caseco").GetProperty("Name").GetString());
        Assert.Single((await Http.QueryNonStaleAsync("from Firms where id() = 'firms/caseco'")).GetProperty("results").EnumerateArray());

        // A map that loads the reference follows a change written in yet another spelling.
        await Http.PutIndexAsync("CaseOrders/ByFirmName", """{"maps": ["map('caseorders', o => ({ FirmName: load(o.Firm).Name }))"]}""");
        Assert.Single((await Http.QueryNonStaleAsync("from index 'CaseOrders/ByFirmName' where FirmName = 'case co'")).GetProperty("results").EnumerateArray());
        var renamed = await Http.PutAsync("firms/caseCO", """{"Name":"Renamed"}""");
        Assert.Equal(HttpStatusCode.OK, renamed.StatusCode);
        Assert.Equal("Firms/CaseCo", (await renamed.JsonAsync()).GetProperty("id").GetString());
        Assert.Single((await Http.QueryNonStaleAsync("from index 'CaseOrders/ByFirmName' where FirmName = 'renamed'")).GetProperty("results").EnumerateArray());

        // An id of any allowed length (up to 512 bytes) is found by id() in another case; a longer value finds nothing.
        var longId = "Firms/" + new string('x', 400);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(longId, """{"Name":"Long"}""")).StatusCode);
        Assert.Single((await Http.QueryNonStaleAsync($"from Firms where id() = '{longId.ToUpperInvariant()}'")).GetProperty("results").EnumerateArray());
        Assert.Empty((await Http.QueryNonStaleAsync($"from Firms where id() = '{longId + new string('y', 200)}'")).GetProperty("results").EnumerateArray());

        Assert.True((await Http.DeleteAsync("docs/FIRMS/CASECO")).IsSuccessStatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await Http.GetAsync("docs/Firms/CaseCo")).StatusCode);
    }

    [Fact]
    public async Task Put_then_get_returns_the_document_with_metadata_and_etag()
    {
        var id = NewId();
        var put = await Http.PutAsync(id, """{"Name":"Ada","Langs":["en","fr"],"Born":1815}""");
        Assert.Equal(HttpStatusCode.Created, put.StatusCode);
        var body = await put.JsonAsync();
        Assert.Equal(id, body.GetProperty("id").GetString());
        var etag = body.GetProperty("etag").GetInt64();
        Assert.Equal(etag, put.EtagHeader());

        var get = await Http.GetAsync($"docs/{id}");
        Assert.Equal(HttpStatusCode.OK, get.StatusCode);
        Assert.Equal(etag, get.EtagHeader());
        var doc = await get.JsonAsync();
        Assert.Equal("Ada", doc.GetProperty("Name").GetString());
        Assert.Equal(1815, doc.GetProperty("Born").GetInt32());
        Assert.Equal(2, doc.GetProperty("Langs").GetArrayLength());
        var meta = doc.GetProperty("@metadata");
        Assert.Equal("people", meta.GetProperty("@collection").GetString());
        Assert.Equal(id, meta.GetProperty("@id").GetString());
        Assert.Equal(etag, meta.GetProperty("@etag").GetInt64());
    }

    [Fact]
    public async Task Updating_returns_200_and_a_higher_etag()
    {
        var id = NewId();
        var first = (await (await Http.PutAsync(id, """{"v":1}""")).JsonAsync()).GetProperty("etag").GetInt64();
        var update = await Http.PutAsync(id, """{"v":2}""");
        Assert.Equal(HttpStatusCode.OK, update.StatusCode);
        Assert.True(update.EtagHeader() > first);
        Assert.Equal(2, (await (await Http.GetAsync($"docs/{id}")).JsonAsync()).GetProperty("v").GetInt32());
    }

    [Fact]
    public async Task Ids_may_contain_slashes_and_the_collection_comes_from_metadata_when_given()
    {
        var id = $"orders/2026/{Guid.NewGuid():N}";
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync(id, """{"@metadata":{"@collection":"Invoices"},"Total":3}""")).StatusCode);
        var doc = await (await Http.GetAsync($"docs/{id}")).JsonAsync();
        Assert.Equal("Invoices", doc.GetProperty("@metadata").GetProperty("@collection").GetString());
        Assert.Equal(id, doc.GetProperty("@metadata").GetProperty("@id").GetString());
    }

    [Fact]
    public async Task If_none_match_with_the_current_etag_gives_304()
    {
        var id = NewId();
        var etag = (await Http.PutAsync(id, """{"a":1}""")).EtagHeader();
        var request = new HttpRequestMessage(HttpMethod.Get, $"docs/{id}");
        request.Headers.IfNoneMatch.Add(new EntityTagHeaderValue($"\"{etag}\""));
        Assert.Equal(HttpStatusCode.NotModified, (await Http.SendAsync(request)).StatusCode);
        var stale = new HttpRequestMessage(HttpMethod.Get, $"docs/{id}");
        stale.Headers.IfNoneMatch.Add(new EntityTagHeaderValue($"\"{etag - 1}\""));
        Assert.Equal(HttpStatusCode.OK, (await Http.SendAsync(stale)).StatusCode);
    }

    [Fact]
    public async Task Head_tells_whether_a_document_exists_and_its_etag_without_a_body()
    {
        var id = NewId();
        var etag = (await Http.PutAsync(id, """{"Name":"Ada"}""")).EtagHeader();
        var head = await Http.SendAsync(new HttpRequestMessage(HttpMethod.Head, $"docs/{id}"));
        Assert.Equal(HttpStatusCode.OK, head.StatusCode);
        Assert.Equal(etag, head.EtagHeader());
        Assert.Empty(await head.Content.ReadAsByteArrayAsync());
        var cached = new HttpRequestMessage(HttpMethod.Head, $"docs/{id}");
        cached.Headers.IfNoneMatch.Add(new EntityTagHeaderValue($"\"{etag}\""));
        Assert.Equal(HttpStatusCode.NotModified, (await Http.SendAsync(cached)).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await Http.SendAsync(new HttpRequestMessage(HttpMethod.Head, $"docs/{NewId()}"))).StatusCode);
    }

    [Fact]
    public async Task Missing_document_is_404_with_a_problem_body()
    {
        var response = await Http.GetAsync($"docs/{NewId()}");
        await HttpJson.AssertProblem(response, HttpStatusCode.NotFound, "does not exist");
    }

    [Fact]
    public async Task If_match_guards_put_patch_and_delete()
    {
        var id = NewId();
        var etag = (await Http.PutAsync(id, """{"n":1}""")).EtagHeader();
        await HttpJson.AssertProblem(await Http.PutAsync(id, """{"n":2}""", ifMatch: etag + 1000), HttpStatusCode.Conflict, "If-Match");
        await HttpJson.AssertProblem(await Http.PatchAsync(id, """[{"op":"replace","path":"/n","value":5}]""", ifMatch: etag + 1000), HttpStatusCode.Conflict, "If-Match");
        await HttpJson.AssertProblem(await Http.DeleteAsync(id, ifMatch: etag + 1000), HttpStatusCode.Conflict, "If-Match");
        Assert.Equal(1, (await (await Http.GetAsync($"docs/{id}")).JsonAsync()).GetProperty("n").GetInt32());

        var ok = await Http.PutAsync(id, """{"n":2}""", ifMatch: etag);
        Assert.Equal(HttpStatusCode.OK, ok.StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await Http.DeleteAsync(id, ifMatch: ok.EtagHeader())).StatusCode);
        await HttpJson.AssertProblem(await Http.PutAsync(NewId(), """{"n":1}""", ifMatch: 1), HttpStatusCode.Conflict, "does not exist");
    }

    [Fact]
    public async Task Malformed_if_match_is_a_400()
    {
        var request = new HttpRequestMessage(HttpMethod.Put, $"docs/{NewId()}") { Content = HttpJson.Json("{}") };
        request.Headers.TryAddWithoutValidation("If-Match", "\"not-an-etag\"");
        await HttpJson.AssertProblem(await Http.SendAsync(request), HttpStatusCode.BadRequest, "If-Match");
    }

    [Fact]
    public async Task Patch_applies_rfc6902_operations()
    {
        var id = NewId();
        await Http.PutAsync(id, """{"Name":"Bob","Tags":["a"],"Old":true,"Score":1}""");
        var patch = await Http.PatchAsync(id, """
            [{"op":"add","path":"/Tags/-","value":"b"},{"op":"remove","path":"/Old"},
             {"op":"replace","path":"/Score","value":10},{"op":"test","path":"/Name","value":"Bob"},
             {"op":"copy","from":"/Name","path":"/Alias"}]
            """);
        Assert.Equal(HttpStatusCode.OK, patch.StatusCode);
        var doc = await (await Http.GetAsync($"docs/{id}")).JsonAsync();
        Assert.Equal(["a", "b"], doc.GetProperty("Tags").EnumerateArray().Select(t => t.GetString()));
        Assert.False(doc.TryGetProperty("Old", out _));
        Assert.Equal(10, doc.GetProperty("Score").GetInt32());
        Assert.Equal("Bob", doc.GetProperty("Alias").GetString());
    }

    [Fact]
    public async Task Patch_leaves_every_value_it_does_not_touch_byte_for_byte_over_http_and_bulk_docs()
    {
        const string original = """
            {"a":"2015-01-27T20:09:32.720","c":"2015-01-27T20:09:32+02:00","n":1.50,"big":123456789012345678901234567890,
             "pi":3.14159265358979323846264,"u":"caf\u00e9 \ud83d\ude00 <&>","e":1.7976931348623157e308,"neg":-0.0,"arr":[1.0,2.50],"o":{"d":"2015-01-27T20:09:32.7200000Z"}}
            """;
        using var before = JsonDocument.Parse(original);
        var viaHttp = NewId();
        var viaBulk = NewId();
        await Http.PutAsync(viaHttp, original);
        await Http.PutAsync(viaBulk, original);
        const string patch = """[{"op":"add","path":"/x","value":1.50},{"op":"add","path":"/arr/-","value":3.10},{"op":"replace","path":"/o/d","value":"2016-01-01T00:00:00.000+01:00"}]""";
        Assert.Equal(HttpStatusCode.OK, (await Http.PatchAsync(viaHttp, patch)).StatusCode);
        var bulk = await Http.PostAsync("bulk_docs", new StringContent($$"""[{"method":"PATCH","id":"{{viaBulk}}","patch":{{patch}}}]""", Encoding.UTF8, "application/json"));
        Assert.Equal(HttpStatusCode.OK, bulk.StatusCode);
        foreach (var id in new[] { viaHttp, viaBulk })
        {
            var doc = await (await Http.GetAsync($"docs/{id}")).JsonAsync();
            foreach (var p in before.RootElement.EnumerateObject().Where(p => p.Name is not ("arr" or "o")))
                Assert.Equal(p.Value.GetRawText(), doc.GetProperty(p.Name).GetRawText());
            Assert.Equal("[1.0,2.50,3.10]", doc.GetProperty("arr").GetRawText());
            Assert.Equal("1.50", doc.GetProperty("x").GetRawText());
            Assert.Equal("\"2016-01-01T00:00:00.000+01:00\"", doc.GetProperty("o").GetProperty("d").GetRawText());
        }
    }

    [Theory]
    [InlineData("""[{"op":"add","path":"/x","value":NaN}]""")]
    [InlineData("""[/* a comment */ {"op":"add","path":"/x","value":1}]""")]
    [InlineData("""[{op:"add","path":"/x","value":1}]""")]
    [InlineData("""[{"op":"add","path":"/x","value":1},]""")]
    [InlineData("""[{"op":"add","path":"/x"}]""")]
    [InlineData("""[{"op":"move","path":"/x"}]""")]
    public async Task A_patch_that_is_not_strict_json_patch_is_a_400_and_changes_nothing(string patch)
    {
        var id = NewId();
        await Http.PutAsync(id, """{"a":1.50}""");
        await HttpJson.AssertProblem(await Http.PatchAsync(id, patch), HttpStatusCode.BadRequest, "");
        var doc = await (await Http.GetAsync($"docs/{id}")).JsonAsync();
        Assert.Equal("1.50", doc.GetProperty("a").GetRawText());
        Assert.False(doc.TryGetProperty("x", out _));
    }

    [Fact]
    public async Task A_patch_whose_result_nests_deeper_than_a_document_may_is_a_400_and_changes_nothing()
    {
        var id = NewId();
        await Http.PutAsync(id, """{"a":{"b":{"c":{"d":{}}}}}""");
        // 62 levels added at depth 5: the value alone is within the limit (64), the result is not.
        var deep = string.Concat(Enumerable.Repeat("[", 62)) + string.Concat(Enumerable.Repeat("]", 62));
        await HttpJson.AssertProblem(await Http.PatchAsync(id, $$"""[{"op":"add","path":"/a/b/c/d/e","value":{{deep}}}]"""), HttpStatusCode.BadRequest, "deeper");
        var doc = await (await Http.GetAsync($"docs/{id}")).JsonAsync();
        Assert.False(doc.GetProperty("a").GetProperty("b").GetProperty("c").GetProperty("d").TryGetProperty("e", out _));
    }

    [Fact]
    public async Task Patch_errors_are_404_400_and_422()
    {
        await HttpJson.AssertProblem(await Http.PatchAsync(NewId(), """[{"op":"add","path":"/a","value":1}]"""), HttpStatusCode.NotFound, "does not exist");
        var id = NewId();
        await Http.PutAsync(id, """{"a":1}""");
        await HttpJson.AssertProblem(await Http.PatchAsync(id, """{"op":"add"}"""), HttpStatusCode.BadRequest, "array");
        await HttpJson.AssertProblem(await Http.PatchAsync(id, """[{"op":"frobnicate","path":"/a"}]"""), HttpStatusCode.BadRequest, "frobnicate");
        await HttpJson.AssertProblem(await Http.PatchAsync(id, """[{"op":"test","path":"/a","value":2}]"""), HttpStatusCode.UnprocessableEntity, "");
        await HttpJson.AssertProblem(await Http.PatchAsync(id, """[{"op":"remove","path":"/missing/deep"}]"""), HttpStatusCode.UnprocessableEntity, "");
        Assert.Equal(1, (await (await Http.GetAsync($"docs/{id}")).JsonAsync()).GetProperty("a").GetInt32());
    }

    [Fact]
    public async Task Delete_removes_the_document_and_is_idempotent()
    {
        var id = NewId();
        await Http.PutAsync(id, """{"a":1}""");
        Assert.Equal(HttpStatusCode.NoContent, (await Http.DeleteAsync(id, null)).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await Http.GetAsync($"docs/{id}")).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await Http.DeleteAsync(id, null)).StatusCode);
    }

    [Fact]
    public async Task Bulk_docs_applies_puts_patches_and_deletes_in_order_and_returns_etags()
    {
        var a = NewId("bulk");
        var b = NewId("bulk");
        await Http.PutAsync(b, """{"x":0}""");
        var response = await Http.BulkAsync($$$"""
            [{"method":"PUT","id":"{{{a}}}","document":{"n":1,"Items":[]}},
             {"method":"PATCH","id":"{{{a}}}","patch":[{"op":"add","path":"/Items/-","value":"first"}]},
             {"method":"delete","id":"{{{b}}}"}]
            """);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var results = (await response.JsonAsync()).GetProperty("results").EnumerateArray().ToList();
        Assert.Equal(3, results.Count);
        var etags = results.Select(r => r.GetProperty("etag").GetInt64()).ToList();
        Assert.True(etags[0] < etags[1] && etags[1] < etags[2], "etags increase in command order");
        Assert.Equal(["PUT", "PATCH", "DELETE"], results.Select(r => r.GetProperty("method").GetString()));
        var doc = await (await Http.GetAsync($"docs/{a}")).JsonAsync();
        Assert.Equal("first", doc.GetProperty("Items")[0].GetString());
        Assert.Equal(etags[1], doc.GetProperty("@metadata").GetProperty("@etag").GetInt64());
        Assert.Equal(HttpStatusCode.NotFound, (await Http.GetAsync($"docs/{b}")).StatusCode);
    }

    [Fact]
    public async Task Bulk_docs_is_all_or_nothing()
    {
        var existing = NewId("atomic");
        var etag = (await Http.PutAsync(existing, """{"v":1}""")).EtagHeader();
        var fresh = NewId("atomic");
        var before = (await fixture.Magpie.StatsAsync()).GetProperty("lastEtag").GetInt64();
        var response = await Http.BulkAsync($$$"""
            [{"method":"PUT","id":"{{{fresh}}}","document":{"v":1}},
             {"method":"PUT","id":"{{{existing}}}","document":{"v":2},"etag":{{{etag + 99}}}}]
            """);
        var problem = await HttpJson.AssertProblem(response, HttpStatusCode.Conflict, "If-Match");
        Assert.Equal(1, problem.GetProperty("index").GetInt32());
        Assert.Equal(HttpStatusCode.NotFound, (await Http.GetAsync($"docs/{fresh}")).StatusCode);
        Assert.Equal(1, (await (await Http.GetAsync($"docs/{existing}")).JsonAsync()).GetProperty("v").GetInt32());
        Assert.Equal(before, (await fixture.Magpie.StatsAsync()).GetProperty("lastEtag").GetInt64());
    }

    [Theory]
    [InlineData("""{"method":"PUT"}""", "[0]: needs a string 'id'")]
    [InlineData("""[{"method":"POST","id":"a/1"}]""", "unknown method 'POST'")]
    [InlineData("""[{"id":"a/1"}]""", "needs a string 'method'")]
    [InlineData("""[{"method":"PUT","id":"a/1","document":[1]}]""", "must be a JSON object")]
    [InlineData("""[{"method":"PUT","id":"a/1"}]""", "PUT needs a 'document'")]
    [InlineData("""[{"method":"PATCH","id":"a/1","patch":{}}]""", "JSON Patch must be a JSON array")]
    [InlineData("""[{"method":"PUT","id":"a/1","document":{},"etag":"x"}]""", "'etag' must be a positive integer")]
    [InlineData("""[{"method":"PUT","id":"a/1","document":{}}, 5]""", "[1]: must be a JSON object")]
    [InlineData("""[]""", "no commands")]
    [InlineData("""[{"method":"PUT",""", "malformed JSON")]
    public async Task Bulk_docs_rejects_bad_commands_with_400(string body, string expected)
    {
        if (expected == "[0]: needs a string 'id'") body = "[" + body + "]";
        await HttpJson.AssertProblem(await Http.BulkAsync(body), HttpStatusCode.BadRequest, expected);
    }

    [Fact]
    public async Task Browse_lists_latest_versions_in_etag_order_by_collection_with_paging()
    {
        var collection = $"browse{Guid.NewGuid():N}"[..20];
        var ids = Enumerable.Range(1, 7).Select(i => $"{collection}/{i}").ToList();
        foreach (var id in ids) await Http.PutAsync(id, $$"""{"n":"{{id}}"}""");
        await Http.PutAsync(ids[0], """{"n":"updated"}""");   // moves to the end of etag order
        await Http.DeleteAsync(ids[1], null);                   // gone from the listing
        await Http.PutAsync($"other/{Guid.NewGuid():N}", "{}");

        var all = await Page($"docs?collection={collection}&pageSize=100");
        Assert.Equal(ids.Skip(2).Append(ids[0]), all.Results);

        var page1 = await Page($"docs?collection={collection}&pageSize=2");
        var page2 = await Page($"docs?collection={collection}&pageSize=2&cursor={page1.Next}");
        var skipped = await Page($"docs?collection={collection}&pageSize=2&start=2");
        Assert.Equal(ids.Skip(2).Take(2), page1.Results);
        Assert.Equal(ids.Skip(4).Take(2), page2.Results);
        Assert.Equal(ids.Skip(4).Take(2), skipped.Results);

        await HttpJson.AssertProblem(await Http.GetAsync("docs?pageSize=0"), HttpStatusCode.BadRequest, "pageSize");
        await HttpJson.AssertProblem(await Http.GetAsync("docs?pageSize=5000"), HttpStatusCode.BadRequest, "pageSize");
        await HttpJson.AssertProblem(await Http.GetAsync("docs?cursor=abc"), HttpStatusCode.BadRequest, "cursor");
    }

    [Fact]
    public async Task Stats_counts_documents_per_collection_case_insensitively()
    {
        var name = $"Stat{Guid.NewGuid():N}"[..16];
        var before = await fixture.Magpie.StatsAsync();
        await Http.PutAsync($"{name}/1", "{}");
        await Http.PutAsync($"{name.ToLowerInvariant()}/2", "{}");
        await Http.PutAsync($"{name}/3", "{}");
        await Http.PutAsync($"{name}/3", """{"again":true}""");
        await Http.DeleteAsync($"{name}/1", null);
        var after = await fixture.Magpie.StatsAsync();
        var collections = after.GetProperty("collections").EnumerateObject().Where(p => p.Name.Equals(name, StringComparison.OrdinalIgnoreCase)).ToList();
        Assert.Single(collections);
        Assert.Equal(2, collections[0].Value.GetInt64());
        Assert.Equal(before.GetProperty("documents").GetInt64() + 2, after.GetProperty("documents").GetInt64());
        Assert.Equal(before.GetProperty("lastEtag").GetInt64() + 5, after.GetProperty("lastEtag").GetInt64());
    }

    [Fact]
    public async Task Bad_documents_and_ids_are_rejected_with_400()
    {
        await HttpJson.AssertProblem(await Http.PutAsync(NewId(), "[1,2]"), HttpStatusCode.BadRequest, "must be a JSON object");
        await HttpJson.AssertProblem(await Http.PutAsync(NewId(), "\"text\""), HttpStatusCode.BadRequest, "must be a JSON object");
        await HttpJson.AssertProblem(await Http.PutAsync(NewId(), "{\"a\":"), HttpStatusCode.BadRequest, "malformed JSON");
        await HttpJson.AssertProblem(await Http.PutAsync(NewId(), "{} {}"), HttpStatusCode.BadRequest, "malformed JSON");
        await HttpJson.AssertProblem(await Http.PutAsync(NewId(), ""), HttpStatusCode.BadRequest, "empty");
        var deep = string.Concat(Enumerable.Repeat("{\"a\":", 80)) + "1" + new string('}', 80);
        await HttpJson.AssertProblem(await Http.PutAsync(NewId(), deep), HttpStatusCode.BadRequest, "deeper");
        await HttpJson.AssertProblem(await Http.PutAsync("x/" + new string('a', 520), "{}"), HttpStatusCode.BadRequest, "512");
        await HttpJson.AssertProblem(await Http.PutAsync("x/bad%01id", "{}"), HttpStatusCode.BadRequest, "control character");
        var longCollection = new string('c', 600);
        await HttpJson.AssertProblem(await Http.PutAsync(NewId(), "{\"@metadata\":{\"@collection\":\"" + longCollection + "\"}}"), HttpStatusCode.BadRequest, "collection name");
    }

    [Fact]
    public async Task A_body_over_the_limit_is_413()
    {
        var big = "{\"blob\":\"" + new string('x', MagpieFixture.BodyLimit + 10) + "\"}";
        // Expect: 100-continue, as clients uploading large bodies should send: the server answers 413 before
        // the body is on the wire (without it the client may hit a closed connection mid-upload instead).
        foreach (var (method, path, body) in new[] { (HttpMethod.Put, $"docs/{NewId()}", big), (HttpMethod.Post, "bulk_docs", "[" + big + "]") })
        {
            var request = new HttpRequestMessage(method, path) { Content = HttpJson.Json(body) };
            request.Headers.ExpectContinue = true;
            await HttpJson.AssertProblem(await Http.SendAsync(request), HttpStatusCode.RequestEntityTooLarge, "limit");
        }
    }

    [Fact]
    public async Task Requests_are_logged_in_the_seed_format()
    {
        var id = NewId("logged");
        await Http.PutAsync(id, "{}");
        await Http.GetAsync($"docs/{id}");
        var pattern = new Regex(@"Request #\s*\d+: GET -\s+\d+ ms - 200 - /docs/" + Regex.Escape(id) + "$");
        for (var i = 0; i < 50 && !fixture.Magpie.Output.Any(pattern.IsMatch); i++) await Task.Delay(100);
        var line = Assert.Single(fixture.Magpie.Output, pattern.IsMatch);
        Assert.Matches(@"Request #( {3}\d| {2}\d\d| \d{3}|\d{4,}): GET - {1,5}\d+ ms - 200 - ", line[line.IndexOf("Request #", StringComparison.Ordinal)..]);
    }

    private async Task<(List<string> Results, string? Next)> Page(string url)
    {
        var body = await (await Http.GetAsync(url)).JsonAsync();
        var results = body.GetProperty("results").EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();
        var next = body.GetProperty("nextCursor").ValueKind == JsonValueKind.String ? body.GetProperty("nextCursor").GetString() : null;
        return (results, next);
    }

    [Fact]
    public async Task Json_responses_give_text_as_written_without_html_escapes()
    {
        // Responses are application/json, never HTML: ' < > & + and letters come back as themselves.
        const string map = "map('Quoted', q => ({ Name: q.Name, Big: q.N > 1 && q.N < 9 }))";
        await Http.PutIndexAsync("Quotes/Plain", JsonSerializer.Serialize(new { maps = new[] { map } }));
        var index = await (await Http.GetAsync("indexes/Quotes/Plain")).Content.ReadAsStringAsync();
        Assert.Contains(map, index);
        Assert.DoesNotContain("\\u0027", index);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("quoted/1", """{"Name":"O'Brien <b> & + é","N":1.50}""")).StatusCode);
        var page = await (await Http.PostAsJsonAsync("queries", new { query = "from index 'Quotes/Plain' select Name", waitForNonStaleResults = true })).Content.ReadAsStringAsync();
        Assert.Contains("O'Brien <b> & + é", page);
        Assert.Contains("O'Brien <b> & + é", await Http.GetStringAsync("docs?collection=quoted"));
    }
}
