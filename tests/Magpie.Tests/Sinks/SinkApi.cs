using System.Net;
using System.Net.Http.Json;
using System.Text.Json;

namespace Magpie.Tests.Sinks;

/// <summary>The /sinks endpoints as tests use them.</summary>
public static class SinkApi
{
    public static async Task PutSinkAsync(this HttpClient http, string name, object sink)
    {
        var response = await http.PutAsJsonAsync($"sinks/{name}", sink);
        if (response.StatusCode != HttpStatusCode.NoContent)
            throw new InvalidOperationException($"PUT sinks/{name} → {(int)response.StatusCode}: {await response.Content.ReadAsStringAsync()}");
    }

    /// <summary>Polls the sink's stats until <paramref name="done"/> holds.</summary>
    public static async Task<JsonElement> WaitForSinkAsync(this HttpClient http, string name, Func<JsonElement, bool> done, TimeSpan timeout)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (true)
        {
            JsonElement? stats = null;
            try { stats = await http.GetFromJsonAsync<JsonElement>($"sinks/{name}/stats"); } catch (HttpRequestException) { }
            if (stats is { } s && done(s)) return s;
            if (DateTime.UtcNow > deadline) throw new TimeoutException($"sink {name} stats never matched; last: {stats}");
            await Task.Delay(100);
        }
    }

    public static long Long(this JsonElement stats, string name) => stats.GetProperty(name).GetInt64();
}
