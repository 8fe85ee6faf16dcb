using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Indexing;

/// <summary>
/// An index's failed documents are kept with it across a restart, and <c>POST /indexes/{name}/errors/retry</c> maps only them again:
/// an index errored because a document its map loads was missing runs on once that document exists, without a rebuild.
/// </summary>
public sealed class IndexErrorRetryTests
{
    private const string Definition = """{ "maps": ["map('Orders', o => ({ City: load(o.Company).City }))"] }""";

    private static async Task<JsonElement> StatusAsync(HttpClient http) => await (await http.GetAsync("indexes/Orders/ByCity")).JsonAsync();

    private static async Task<JsonElement> UntilAsync(HttpClient http, Func<JsonElement, bool> done, string what)
    {
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (true)
        {
            var status = (await StatusAsync(http)).GetProperty("status");
            if (done(status)) return status;
            Assert.True(DateTime.UtcNow < deadline, $"{what}: {status}");
            await Task.Delay(100);
        }
    }

    [Fact]
    public async Task Failed_documents_are_kept_across_a_restart_and_retried_alone_once_what_they_load_exists()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var http = magpie.Http;
        Assert.True((await http.BulkPutAsync(Enumerable.Range(1, 600).Select(i => ($"orders/{i}", """{"Company":"companies/late"}""")))).IsSuccessStatusCode);
        await http.PutIndexAsync("Orders/ByCity", Definition);

        // Every order fails (its company does not exist yet): past 15 % of 500 the index is errored and stops.
        var errored = await UntilAsync(http, s => s.GetProperty("failure").GetString()?.StartsWith("errored") == true, "never errored");
        Assert.True(errored.GetProperty("errorCount").GetInt64() >= 500);
        Assert.Contains("orders/", errored.GetProperty("errors")[0].GetProperty("documentId").GetString());

        // Kept with the index: a restart still shows them.
        await magpie.StopAsync();
        await magpie.StartAsync();
        // Still errored there, so it indexes nothing: what fixes it below is the retry alone.
        var restarted = await UntilAsync(http, s => s.GetProperty("errorCount").GetInt64() >= 500
            && s.GetProperty("failure").GetString()?.StartsWith("errored") == true, "errors lost across the restart");
        Assert.NotEmpty(restarted.GetProperty("errors").EnumerateArray());

        // The company appears; the retry maps the failed orders again, and the index runs on: all 600 answer, no error left.
        Assert.True((await http.PutAsync("companies/late", """{"City":"Lyon"}""")).IsSuccessStatusCode);
        var retry = await http.PostAsync("indexes/Orders/ByCity/errors/retry", null);
        Assert.Equal(HttpStatusCode.Accepted, retry.StatusCode);
        Assert.True((await retry.JsonAsync()).GetProperty("retrying").GetInt64() >= 500);
        await UntilAsync(http, s => s.GetProperty("errorCount").GetInt64() == 0 && s.GetProperty("failure").ValueKind == JsonValueKind.Null, "the retry did not clear the errors");
        var lyon = await http.QueryNonStaleAsync("from index 'Orders/ByCity' where City = 'Lyon'");
        Assert.Equal(600, lyon.GetProperty("totalResults").GetInt32());
        await HttpJson.AssertProblem(await http.PostAsync("indexes/Nope/errors/retry", null), HttpStatusCode.NotFound, "does not exist");
    }
}
