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
        await response.Content.ReadFromJsonAsync<JsonElement>();

    public static long EtagHeader(this HttpResponseMessage response) => long.Parse(response.Headers.ETag!.Tag.Trim('"'));

    private static HttpRequestMessage With(HttpRequestMessage request, long? ifMatch)
    {
        if (ifMatch is { } e) request.Headers.IfMatch.Add(new EntityTagHeaderValue($"\"{e}\""));
        return request;
    }
}
