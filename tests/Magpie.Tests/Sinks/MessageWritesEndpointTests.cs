using System.Net;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Sinks;

/// <summary>Ingest's <c>POST /message_writes</c>, what a sinks process writes through: each message once per ledger, bad input a 400.</summary>
public sealed class MessageWritesEndpointTests(MagpieFixture magpie) : IClassFixture<MagpieFixture>
{
    private HttpClient Http => magpie.Magpie.Http;

    [Fact]
    public async Task Messages_apply_once_per_ledger_and_a_refused_one_says_which_write()
    {
        var n = Guid.NewGuid().ToString("N")[..8];
        var body = $$"""
            { "ledger": "sink:http{{n}}", "messages": [
              { "id": "m1", "writes": [ { "method": "PUT", "id": "notes{{n}}/1", "json": { "Text": "a" } } ] },
              { "id": "m2", "writes": [ { "method": "PUT", "id": "notes{{n}}/2", "json": { "Text": "b" } },
                                        { "method": "PATCH", "id": "notes{{n}}/missing", "json": [ { "op": "add", "path": "/x", "value": 1 } ] } ] } ] }
            """;
        var first = await (await Http.PostAsync("message_writes", HttpJson.Json(body))).JsonAsync();
        var results = first.GetProperty("results").EnumerateArray().ToList();
        Assert.Equal(("m1", "applied"), (results[0].GetProperty("message").GetString(), results[0].GetProperty("result").GetString()));
        Assert.Equal("refused", results[1].GetProperty("result").GetString());
        Assert.Contains($"write [1] (patch notes{n}/missing)", results[1].GetProperty("reason").GetString());
        Assert.Equal(HttpStatusCode.NotFound, (await Http.GetAsync($"docs/notes{n}/2")).StatusCode);   // m2 was all or nothing

        var again = await (await Http.PostAsync("message_writes", HttpJson.Json(body))).JsonAsync();
        Assert.Equal("alreadyApplied", again.GetProperty("results")[0].GetProperty("result").GetString());
    }

    [Theory]
    [InlineData("not json", "")]
    [InlineData("""{ "messages": [] }""", "'ledger'")]
    [InlineData("""{ "ledger": "sink:x", "messages": [ { "id": "m", "writes": [ { "method": "POST", "id": "a/1" } ] } ] }""", "PUT, PATCH or DELETE")]
    [InlineData("""{ "ledger": "", "messages": [] }""", "'ledger' is empty")]
    public async Task A_request_that_is_not_one_is_a_400_naming_what_is_wrong(string body, string detail) =>
        await HttpJson.AssertProblem(await Http.PostAsync("message_writes", HttpJson.Json(body)), HttpStatusCode.BadRequest, detail);
}
