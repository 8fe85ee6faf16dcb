using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Http;

namespace Magpie.Tests.Etl;

/// <summary>The /etl endpoints as tests use them.</summary>
public static class EtlApi
{
    public static async Task PutConnectionAsync(this HttpClient http, string name, object connection) =>
        await Ok(await http.PutAsJsonAsync($"etl/connections/{name}", connection));

    public static async Task PutTaskAsync(this HttpClient http, string name, object task) =>
        await Ok(await http.PutAsJsonAsync($"etl/tasks/{name}", task));

    public static async Task<JsonElement> TaskStatsAsync(this HttpClient http, string name) =>
        await http.GetFromJsonAsync<JsonElement>($"etl/tasks/{name}/stats");

    /// <summary>Polls the task's stats until <paramref name="done"/> holds.</summary>
    public static async Task<JsonElement> WaitForStatsAsync(this HttpClient http, string name, Func<JsonElement, bool> done, TimeSpan timeout)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (true)
        {
            JsonElement? stats = null;
            try { stats = await http.TaskStatsAsync(name); } catch (HttpRequestException) { }
            if (stats is { } s && done(s)) return s;
            if (DateTime.UtcNow > deadline) throw new TimeoutException($"task {name} stats never matched; last: {stats}");
            await Task.Delay(200);
        }
    }

    private static async Task Ok(HttpResponseMessage response)
    {
        if (response.StatusCode != HttpStatusCode.NoContent)
            throw new InvalidOperationException($"{response.RequestMessage?.Method} {response.RequestMessage?.RequestUri} → {(int)response.StatusCode}: {await response.Content.ReadAsStringAsync()}");
    }
}
