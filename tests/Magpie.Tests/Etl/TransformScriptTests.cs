using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Scripts;
using Magpie.Scripting;

namespace Magpie.Tests.Etl;

/// <summary>The script API users write against, and the sandbox around it (real Jint, no broker).</summary>
[Trait("Category", "Fast")]
public sealed class TransformScriptTests
{
    private static ChangeEvent Put(string id, string json, long etag = 7) =>
        new(id, id.Split('/')[0], etag, ChangeOp.Put, DateTimeOffset.UtcNow, JsonDocument.Parse(json).RootElement);

    private static ChangeEvent Delete(string id, long etag = 8) => new(id, id.Split('/')[0], etag, ChangeOp.Delete, DateTimeOffset.UtcNow, null);

    [Fact]
    public void Loads_the_object_with_routing_key_and_attributes_and_knows_the_document_id()
    {
        var script = TransformScript.Compile("""
            if (this.Total < 10) return;
            loadToOrders({ OrderId: id(this), Total: this.Total, Lines: this.Lines.length }, 'orders.big', { type: 'com.shop.order', source: '/shop' });
            """, ScriptLimits.Default);

        Assert.Empty(script.Run(Put("orders/1", """{"Total": 5, "Lines": []}""")));
        var loaded = Assert.Single(script.Run(Put("orders/2", """{"Total": 50, "Lines": [1, 2]}""")));
        Assert.Equal("Orders", loaded.Destination);
        Assert.Equal("orders.big", loaded.RoutingKey);
        Assert.Equal(("com.shop.order", "/shop", (string?)null), (loaded.Type, loaded.Source, loaded.Id));
        var body = JsonDocument.Parse(loaded.BodyJson).RootElement;
        Assert.Equal("orders/2", body.GetProperty("OrderId").GetString());
        Assert.Equal(50, body.GetProperty("Total").GetInt32());
        Assert.Equal(2, body.GetProperty("Lines").GetInt32());
        Assert.Equal(["Orders"], script.Destinations);
    }

    [Fact]
    public void LoadTo_with_a_name_reaches_destinations_that_are_not_identifiers_and_several_loads_keep_their_order()
    {
        var script = TransformScript.Compile("""
            loadTo('users.audit', { Name: this.Name });
            loadTo('users.search', { Name: this.Name }, { Id: 'custom-id' });
            """, ScriptLimits.Default);
        var loaded = script.Run(Put("users/1", """{"Name": "Ann"}"""));
        Assert.Equal(["users.audit", "users.search"], loaded.Select(l => l.Destination));
        Assert.Null(loaded[0].RoutingKey);
        Assert.Equal("custom-id", loaded[1].Id);
        Assert.Equal(["users.audit", "users.search"], script.Destinations);
    }

    [Fact]
    public void Deletes_run_the_deleted_function_or_go_by_default_to_every_named_destination()
    {
        var custom = TransformScript.Compile("""
            function deleted(docId, collection) { loadToOrders({ Deleted: docId, From: collection }, 'orders.deleted'); }
            loadToOrders({ Total: this.Total });
            """, ScriptLimits.Default);
        var d = Assert.Single(custom.Run(Delete("orders/9")));
        Assert.Equal(("Orders", "orders.deleted"), (d.Destination, d.RoutingKey));
        Assert.Equal("""{"Deleted":"orders/9","From":"orders"}""", d.BodyJson);

        var byDefault = TransformScript.Compile("loadToOrders({ Total: this.Total }); loadTo('audit', { Id: id(this) });", ScriptLimits.Default);
        var defaults = byDefault.Run(Delete("orders/9"));
        Assert.Equal(["Orders", "audit"], defaults.Select(m => m.Destination));
        Assert.All(defaults, m => Assert.Equal("orders/9", m.RoutingKey));
        Assert.All(defaults, m => Assert.Equal("""{"id":"orders/9","collection":"orders"}""", m.BodyJson));

        var ignoring = TransformScript.Compile("function deleted() { } loadToOrders(this);", ScriptLimits.Default);
        Assert.Empty(ignoring.Run(Delete("orders/9")));
    }

    [Fact]
    public void Loaded_objects_are_serialized_as_JSON_stringify_would_and_documents_arrive_intact()
    {
        var script = TransformScript.Compile("""
            loadToX({
              copy: this, n: 1.5, big: 1e21, nan: NaN, undef: undefined, f: function () {}, arr: [1, undefined, function () {}, 'é"\n'],
              date: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)), custom: { toJSON: function () { return 'custom!'; } }, nested: { a: [[{ b: null }]] }
            });
            """, ScriptLimits.Default);
        var doc = """{"Title":"Ünïcødé \"quoted\" \\ text","Tags":["a","b"],"Score":-3,"Ratio":0.25,"Missing":null,"Flag":true,"Deep":{"x":[1,[2,{"y":"z"}]]}}""";
        var body = JsonDocument.Parse(Assert.Single(script.Run(Put("x/1", doc))).BodyJson).RootElement;
        Assert.True(System.Text.Json.Nodes.JsonNode.DeepEquals(System.Text.Json.Nodes.JsonNode.Parse(doc), System.Text.Json.Nodes.JsonNode.Parse(body.GetProperty("copy").GetRawText())));
        Assert.Contains("Ünïcødé", body.GetProperty("copy").GetRawText());
        Assert.Equal(1.5, body.GetProperty("n").GetDouble());
        Assert.Equal(1e21, body.GetProperty("big").GetDouble());
        Assert.Equal(JsonValueKind.Null, body.GetProperty("nan").ValueKind);
        Assert.False(body.TryGetProperty("undef", out _));
        Assert.False(body.TryGetProperty("f", out _));
        var arr = body.GetProperty("arr");
        Assert.Equal((1, JsonValueKind.Null, JsonValueKind.Null, "é\"\n"), (arr[0].GetInt32(), arr[1].ValueKind, arr[2].ValueKind, arr[3].GetString()));
        Assert.Equal("2024-01-02T03:04:05.006Z", body.GetProperty("date").GetString());
        Assert.Equal("custom!", body.GetProperty("custom").GetString());
        Assert.Equal(JsonValueKind.Null, body.GetProperty("nested").GetProperty("a")[0][0].GetProperty("b").ValueKind);

        var cyclic = TransformScript.Compile("var o = {}; o.self = o; loadToX(o);", ScriptLimits.Default);
        Assert.Contains("refers to itself", Assert.Throws<ScriptRunException>(() => cyclic.Run(Put("x/1", "{}"))).Message);
    }

    [Fact]
    public void A_syntax_error_names_the_line_and_column_of_the_users_script()
    {
        var e = Assert.Throws<ScriptSyntaxException>(() => TransformScript.Compile("var a = 1;\nvar b = ;\nloadToX(this);", ScriptLimits.Default));
        Assert.Equal(2, e.Line);
        Assert.Contains("line 2", e.Message);
        var unclosed = Assert.Throws<ScriptSyntaxException>(() => TransformScript.Compile("loadToX(this", ScriptLimits.Default));
        Assert.Equal((1, 13), (unclosed.Line, unclosed.Column));
        Assert.Contains("end of the script", unclosed.Message);
    }

    [Fact]
    public void A_throwing_script_reports_the_error_and_the_next_document_still_runs()
    {
        var script = TransformScript.Compile("if (this.Bad) throw new Error('bad document'); loadToX({ A: this.A.B });", ScriptLimits.Default);
        var thrown = Assert.Throws<ScriptRunException>(() => script.Run(Put("x/1", """{"Bad": true}""")));
        Assert.Contains("bad document", thrown.Message);
        var typeError = Assert.Throws<ScriptRunException>(() => script.Run(Put("x/2", """{}""")));
        Assert.Contains("line 1", typeError.Message);
        Assert.Single(script.Run(Put("x/3", """{"A": {"B": 1}}""")));
    }

    [Fact]
    public void The_sandbox_stops_endless_loops_huge_allocations_deep_recursion_and_has_no_CLR()
    {
        var limits = ScriptLimits.Default with { Timeout = TimeSpan.FromMilliseconds(500), MaxAllocatedBytes = 64L * 1024 * 1024 };
        var loop = TransformScript.Compile("while (true) { }", limits with { MaxStatements = int.MaxValue, MaxAllocatedBytes = long.MaxValue });
        Assert.Contains("longer than 500 ms", Assert.Throws<ScriptRunException>(() => loop.Run(Put("x/1", "{}"))).Message);

        var memory = TransformScript.Compile("var s = 'x'; var keep = []; while (true) { s = s + s; keep.push(s); }", limits with { MaxStatements = int.MaxValue, Timeout = TimeSpan.FromSeconds(30) });
        Assert.Contains("more than 64 MB", Assert.Throws<ScriptRunException>(() => memory.Run(Put("x/1", "{}"))).Message);

        var recursion = TransformScript.Compile("function f(n) { return f(n + 1); } f(0);", limits);
        Assert.Contains("recursed deeper", Assert.Throws<ScriptRunException>(() => recursion.Run(Put("x/1", "{}"))).Message);

        var statements = TransformScript.Compile("for (var i = 0; i < 1e9; i++) { }", limits with { Timeout = TimeSpan.FromMinutes(1), MaxStatements = 10_000 });
        Assert.Contains("more than 10,000 statements", Assert.Throws<ScriptRunException>(() => statements.Run(Put("x/1", "{}"))).Message);

        var clr = TransformScript.Compile("loadToX({ t: typeof System + '/' + typeof importNamespace + '/' + typeof require });", limits);
        Assert.Equal("""{"t":"undefined/undefined/undefined"}""", Assert.Single(clr.Run(Put("x/1", "{}"))).BodyJson);

        // After all that, the same engine still runs a normal document.
        Assert.Single(clr.Run(Put("x/2", "{}")));
    }
}
