using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;

namespace Magpie.Tests.Http;

/// <summary>Small request helpers so tests read as the HTTP they send.</summary>
public static class HttpJson
{
    public static StringContent Json(string json) => new(json, Encoding.UTF8, "application/json");

    public static Task<HttpResponseMessage> PutAsync(this HttpClient http, string id, string json, long? ifMatch = null) =>
        http.SendAsync(With(new HttpRequestMessage(HttpMethod.Put, $"docs/{id}") { Content = Json(json) }, ifMatch));

    public static Task<HttpResponseMessage> PatchAsync(this HttpClient http, string id, string patch, long? ifMatch = null) =>
        http.SendAsync(With(new HttpRequestMessage(HttpMethod.Patch, $"docs/{id}") { Content = Json(patch) }, ifMatch));

    public static Task<HttpResponseMessage> DeleteAsync(this HttpClient http, string id, long? ifMatch) =>
        http.SendAsync(With(new HttpRequestMessage(HttpMethod.Delete, $"docs/{id}"), ifMatch));

    public static Task<HttpResponseMessage> BulkAsync(this HttpClient http, string commands) => http.PostAsync("bulk_docs", Json(commands));

    /// <summary>POST /bulk_docs with PUTs of (id, document JSON) pairs.</summary>
    public static Task<HttpResponseMessage> BulkPutAsync(this HttpClient http, IEnumerable<(string Id, string Document)> docs) =>
        http.BulkAsync("[" + string.Join(',', docs.Select(d => "{\"method\":\"PUT\",\"id\":" + JsonSerializer.Serialize(d.Id) + ",\"document\":" + d.Document + "}")) + "]");

    /// <summary>The etags a successful bulk response returned, in command order.</summary>
    public static async Task<List<long>> BulkEtagsAsync(this HttpResponseMessage response) =>
        (await response.JsonAsync()).GetProperty("results").EnumerateArray().Select(r => r.GetProperty("etag").GetInt64()).ToList();

    public static async Task<JsonElement> JsonAsync(this HttpResponseMessage response) =>
        await response.Content.ReadFromJsonAsync<JsonElement>(Magpie.Contracts.WireJson.Web);

    public static async Task PutIndexAsync(this HttpClient http, string name, string definition)
    {
        var put = await http.PutAsync($"indexes/{name}", Json(definition));
        Xunit.Assert.True(put.StatusCode == System.Net.HttpStatusCode.NoContent, await put.Content.ReadAsStringAsync());
    }

    /// <summary>A query's first page (up to 1024 results) once the index is non-stale.</summary>
    public static async Task<JsonElement> QueryNonStaleAsync(this HttpClient http, string rql)
    {
        var r = await http.PostAsJsonAsync("queries", new { query = rql, pageSize = 1024, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Xunit.Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var body = await r.JsonAsync();
        Xunit.Assert.False(body.GetProperty("isStale").GetBoolean(), rql);
        return body;
    }

    /// <summary>Asserts an RFC 7807 problem body with <paramref name="status"/> whose detail contains <paramref name="detailContains"/>.</summary>
    public static async Task<JsonElement> AssertProblem(HttpResponseMessage response, System.Net.HttpStatusCode status, string detailContains)
    {
        var text = await response.Content.ReadAsStringAsync();
        Xunit.Assert.True(status == response.StatusCode, $"expected {(int)status}, got {(int)response.StatusCode}: {text}");
        Xunit.Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        var problem = JsonDocument.Parse(text).RootElement;
        Xunit.Assert.Equal((int)status, problem.GetProperty("status").GetInt32());
        Xunit.Assert.Contains(detailContains, problem.GetProperty("detail").GetString(), StringComparison.OrdinalIgnoreCase);
        return problem;
    }

    public static long EtagHeader(this HttpResponseMessage response) => long.Parse(response.Headers.ETag!.Tag.Trim('"'));

    private static HttpRequestMessage With(HttpRequestMessage request, long? ifMatch)
    {
        if (ifMatch is { } e) request.Headers.IfMatch.Add(new EntityTagHeaderValue($"\"{e}\""));
        return request;
    }
}
