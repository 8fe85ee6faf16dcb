using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Xml.Linq;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Queries.Conformance;

/// <summary>
/// Projections as RavenDB users write them: paths through arrays, JavaScript projections with declared functions and
/// load(), the load clause, include (in pages, streams and subscription batches), timings() and explanations(), and the
/// limits a projection cannot pass.
/// </summary>
public sealed class ProjectionTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>
{
    private HttpClient Http => fx.Magpie.Http;

    private async Task<JsonElement> QueryAsync(string rql, int pageSize = 100)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = rql, pageSize, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, $"{rql}\n{await r.Content.ReadAsStringAsync()}");
        return await r.JsonAsync();
    }

    private static List<JsonElement> Results(JsonElement answer) => answer.GetProperty("results").EnumerateArray().ToList();

    [Fact]
    public async Task A_javascript_projection_reads_the_document_declared_functions_and_loaded_documents()
    {
        var users = XDocument.Load(Path.Combine(RepoPaths.StackExchangeSample, "Users.xml")).Root!.Elements("row")
            .ToDictionary(u => (int)u.Attribute("Id")!, u => (string)u.Attribute("DisplayName")!);
        var answer = await QueryAsync("""
            declare function words(s) { return s ? s.split(' ').length : 0; }
            from Posts as p where PostTypeId = 1 and Score >= 20
            select { Title: p.Title, Words: words(p.Title), Owner: load('users/' + p.OwnerUserId).DisplayName, Id: id(p) }
            """);
        var expected = fx.Posts.Where(p => p.Type == 1 && p.Score >= 20).ToDictionary(p => p.Id);
        Assert.Equal(expected.Count, Results(answer).Count);
        foreach (var r in Results(answer))
        {
            var post = expected[r.GetProperty("Id").GetString()!];
            Assert.Equal(post.Title, r.GetProperty("Title").GetString());
            Assert.Equal(post.Title!.Split(' ').Length, r.GetProperty("Words").GetInt32());
            Assert.Equal(users[post.Owner!.Value], r.GetProperty("Owner").GetString());
        }
    }

    /// <summary>RavenDB's forms from its projection docs: a declared function as the projection, getMetadata(), @metadata.@id on results, its request body.</summary>
    [Fact]
    public async Task Ravendb_projection_forms_declared_output_get_metadata_result_ids_and_its_body()
    {
        var expected = fx.Posts.Where(p => p.Type == 1 && p.Score >= 20).ToDictionary(p => p.Id);
        var body = new { Query = """
            declare function output(p) { return { Title: p.Title, Id: getMetadata(p)['@id'], Collection: getMetadata(p)['@collection'] }; }
            from Posts as p where p.PostTypeId = $type and p.Score >= $score select output(p)
            """, QueryParameters = new { type = 1, score = 20 }, pageSize = 100, waitForNonStaleResults = true, timeoutMs = 60_000 };
        var r = await Http.PostAsJsonAsync("queries", body);
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var results = Results(await r.JsonAsync());
        Assert.Equal(expected.Keys.Order(), results.Select(x => x.GetProperty("Id").GetString()!).Order());
        foreach (var x in results)
        {
            Assert.Equal(expected[x.GetProperty("Id").GetString()!].Title, x.GetProperty("Title").GetString());
            Assert.Equal("posts", x.GetProperty("Collection").GetString());
            Assert.Equal(x.GetProperty("Id").GetString(), x.GetProperty("@metadata").GetProperty("@id").GetString());
            Assert.True(x.GetProperty("@metadata").GetProperty("@projection").GetBoolean());
        }
        var fields = Results(await QueryAsync("from Posts where id() = 'posts/1' select Title")).Single();
        Assert.Equal("posts/1", fields.GetProperty("@metadata").GetProperty("@id").GetString());
        var both = await Http.PostAsJsonAsync("queries", new { query = "from Posts where Score = $s", parameters = new { s = 1 }, QueryParameters = new { s = 1 } });
        await HttpJson.AssertProblem(both, HttpStatusCode.BadRequest, "give the parameters once");
    }

    [Fact]
    public async Task Select_paths_go_through_arrays_and_nested_objects()
    {
        var comments = XDocument.Load(Path.Combine(RepoPaths.StackExchangeSample, "Comments.xml")).Root!.Elements("row")
            .Where(c => (string)c.Attribute("PostId")! == "1").Select(c => (int)c.Attribute("Id")!).Order().ToList();
        var r = Results(await QueryAsync("from Posts where id() = 'posts/1' select Comments[].Id as CommentIds, Title, id() as Id")).Single();
        Assert.Equal(comments, r.GetProperty("CommentIds").EnumerateArray().Select(c => c.GetInt32()).Order().ToList());
        Assert.Equal("posts/1", r.GetProperty("Id").GetString());
        var order = Results(await QueryAsync("from orders where id() = 'orders/1' select Lines[].Product as Products, Lines.Quantity as Quantities")).Single();
        Assert.Equal(["products/1", "products/2"], order.GetProperty("Products").EnumerateArray().Select(p => p.GetString()));
        Assert.Equal([2, 1], order.GetProperty("Quantities").EnumerateArray().Select(p => p.GetInt32()));
    }

    [Fact]
    public async Task Conditions_on_nested_paths_and_through_arrays_use_the_automatic_index()
    {
        string[] Ids(JsonElement answer) => Results(answer).Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()!).Order().ToArray();
        Assert.Equal(["orders/1", "orders/2"], Ids(await QueryAsync("from orders where Lines[].Product = 'products/2'")));
        Assert.Equal(["orders/2"], Ids(await QueryAsync("from orders where Lines.Quantity >= 5")));
        Assert.Equal(["orders/3"], Ids(await QueryAsync("from orders where Lines[].Product = 'products/404' and exists(Company)")));
    }

    [Fact]
    public async Task Load_reads_related_documents_and_include_returns_each_once_beside_the_page()
    {
        var answer = await QueryAsync("""
            from orders as o where startsWith(id(), 'orders/') order by id() load o.Company as c, o.Lines[].Product as products
            select { Company: c ? c.Name : null, Products: products.map(x => x ? x.Name : null) } include Company, Lines[].Product
            """);
        var results = Results(answer);
        Assert.Equal(["Acme", "Globex", null], results.Select(r => r.GetProperty("Company").GetString()));
        Assert.Equal(["Burr grinder", "Kettle"], results[0].GetProperty("Products").EnumerateArray().Select(p => p.GetString()));
        // Included: every referenced document that exists, once (products/2 is in two orders; the 404s are not there).
        var includes = answer.GetProperty("includes").EnumerateObject().ToDictionary(p => p.Name, p => p.Value);
        Assert.Equal(["companies/1", "companies/2", "products/1", "products/2", "products/3"], includes.Keys.Order());
        Assert.Equal("Kettle", includes["products/2"].GetProperty("Name").GetString());

        // Streamed: the page's results, then its included documents as {"@include": document} lines.
        using var streamed = await Http.PostAsJsonAsync("streams/queries", new { query = "from orders where startsWith(id(), 'orders/') include Company" });
        var lines = (await streamed.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(l => JsonDocument.Parse(l).RootElement).ToList();
        Assert.Equal(3, lines.Count(l => !l.TryGetProperty("@include", out _)));
        Assert.Equal(["companies/1", "companies/2"], lines.Where(l => l.TryGetProperty("@include", out _))
            .Select(l => l.GetProperty("@include").GetProperty("@metadata").GetProperty("@id").GetString()).Order());
    }

    [Fact]
    public async Task Fields_of_loaded_documents_selected_by_path_are_read_from_them()
    {
        // The probe's: `load r.Post as p select p.Title` answered {"p.Title": null}.
        var answer = await QueryAsync("from orders as o where startsWith(id(), 'orders/') order by id() load o.Company as c select c.Name, c.Nope, o.Company as Ref, id()");
        Assert.Equal(
            [("Acme", "companies/1", "orders/1"), ("Globex", "companies/2", "orders/2"), (null, "companies/404", "orders/3")],
            Results(answer).Select(r => (r.GetProperty("Name").GetString(), r.GetProperty("Ref").GetString(), r.GetProperty("id()").GetString())));
        Assert.All(Results(answer), r => Assert.Equal(JsonValueKind.Null, r.GetProperty("Nope").ValueKind));
        // Without a from alias, and with one named.
        answer = await QueryAsync("from orders where startsWith(id(), 'orders/') order by id() load Company as c select c.Name as CompanyName");
        Assert.Equal(["Acme", "Globex", null], Results(answer).Select(r => r.GetProperty("CompanyName").GetString()));
    }

    [Fact]
    public async Task Fields_named_like_rql_words_are_fields_where_a_field_goes()
    {
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("docs/ballots/1", HttpJson.Json("""{"By":"companies/1","In":2,"Desc":"a"}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await Http.PutAsync("docs/ballots/2", HttpJson.Json("""{"By":"companies/1","In":3,"Desc":"b"}"""))).StatusCode);
        var grouped = Results(await QueryAsync("from ballots group by By select By, count() as Votes, sum(In) as Total"));
        Assert.Equal(("companies/1", 2, 5.0), (grouped.Single().GetProperty("By").GetString(), grouped.Single().GetProperty("Votes").GetInt32(), grouped.Single().GetProperty("Total").GetDouble()));
        var included = await QueryAsync("from ballots order by Desc desc include By");
        Assert.Equal(["ballots/2", "ballots/1"], Results(included).Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()));
        Assert.Equal(["companies/1"], included.GetProperty("includes").EnumerateObject().Select(p => p.Name));
    }

    [Fact]
    public async Task A_subscription_batch_carries_its_projection_and_includes()
    {
        var created = await Http.PostAsJsonAsync("subscriptions", new { name = "orders-with-companies", query = "from orders as o load o.Company as c select { Company: c ? c.City : null, Lines: o.Lines.length } include Company" });
        Assert.Equal(HttpStatusCode.Created, created.StatusCode);
        var batch = await (await Http.GetAsync("subscriptions/orders-with-companies/next?worker=w&maxDocs=10&waitMs=10000")).JsonAsync();
        var items = batch.GetProperty("items").EnumerateArray().ToDictionary(i => i.GetProperty("id").GetString()!, i => i.GetProperty("document"));
        Assert.Equal("Lyon", items["orders/1"].GetProperty("Company").GetString());
        Assert.Equal(2, items["orders/1"].GetProperty("Lines").GetInt32());
        Assert.Equal(JsonValueKind.Null, items["orders/3"].GetProperty("Company").ValueKind);
        Assert.Equal(["companies/1", "companies/2"], batch.GetProperty("includes").EnumerateObject().Select(p => p.Name).Order());
    }

    [Fact]
    public async Task Timings_and_explanations_come_beside_the_results()
    {
        var answer = await QueryAsync($"from index '{RqlConformance.StaticIndex}' where search(Body, 'primary sources') order by score() desc include timings(), explanations()", 5);
        var timings = answer.GetProperty("timings").EnumerateObject().ToDictionary(p => p.Name, p => p.Value.GetDouble());
        Assert.Equal(["parse", "plan", "results", "search", "total"], timings.Keys.Order());
        Assert.All(timings.Values, ms => Assert.True(ms >= 0));
        Assert.True(timings["total"] >= timings["search"]);
        var explanations = answer.GetProperty("explanations").EnumerateObject().ToList();
        Assert.Equal(Results(answer).Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()), explanations.Select(e => e.Name));
        Assert.All(explanations, e => Assert.Contains("BM25", e.Value[0].GetString()));
    }

    [Fact]
    public async Task A_projection_loads_up_to_64_documents_and_is_refused_past_them()
    {
        // The 64 allowed loads run first: on a loaded machine the engine's first run of this shape is slow, and the refusal
        // asserted below is the load limit's, not the script's time limit.
        var within = await QueryAsync("from Posts as p where id() = 'posts/1' select { x: [...Array(64).keys()].map(i => load('nobody/' + i)) }", 1);
        var loaded = Results(within).Single().GetProperty("x").EnumerateArray().ToList();
        Assert.Equal(64, loaded.Count);
        Assert.All(loaded, l => Assert.Equal(JsonValueKind.Null, l.ValueKind));
        var past = await Http.PostAsJsonAsync("queries", new { query = "from Posts as p where id() = 'posts/1' select { x: [...Array(65).keys()].map(i => load('nobody/' + i)) }" });
        await HttpJson.AssertProblem(past, HttpStatusCode.BadRequest, "a result loaded more than 64 documents (the limit)");
    }

    [Theory]
    [InlineData("from Posts as p where id() = 'posts/1' select { x: (function f() { while (true) {} })() }", "the projection failed on posts/1: script ran")]
    [InlineData("from Posts as p where id() = 'posts/1' select { x: p.Title.foo.bar }", "the projection failed on posts/1: TypeError")]
    [InlineData("from Posts as p select { x: }", "the projection does not parse")]
    [InlineData("from Posts select { x: 1 }", "reads the document by its alias")]
    [InlineData("from Posts as p select { x: 1", "never closes")]
    [InlineData("declare function f() { return 1; } from Posts", "declared functions and loads are for JavaScript")]
    [InlineData("from Posts as p load p.A as p select { }", "'p' names two things")]
    public async Task Projections_past_their_limits_or_malformed_are_refused_with_a_400(string rql, string expected)
    {
        var r = await Http.PostAsJsonAsync("queries", new { query = rql, waitForNonStaleResults = true, timeoutMs = 60_000 });
        await HttpJson.AssertProblem(r, HttpStatusCode.BadRequest, expected);
    }
}
