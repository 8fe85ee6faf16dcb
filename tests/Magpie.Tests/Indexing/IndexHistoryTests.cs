using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Indexing;

/// <summary>GET /indexes/{name}/history: every definition an index had, with when it was set, kept across a restart; the same PUT again is a no-op.</summary>
public sealed class IndexHistoryTests
{
    public const string V1 = """{ "maps": ["map('Posts', p => ({ Score: p.Score }))"] }""";
    public const string V2 = """{ "maps": ["map('Posts', p => ({ Score: p.Score, Title: p.Title }))"] }""";

    /// <summary>The history's definitions' maps, oldest first (null where the index was deleted), each set no earlier than the one before.</summary>
    public static async Task<List<string?>> HistoryAsync(HttpClient http, string name)
    {
        var r = await http.GetAsync($"indexes/{name}/history");
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var versions = (await r.JsonAsync()).EnumerateArray().ToList();
        var times = versions.Select(v => v.GetProperty("setAt").GetDateTimeOffset()).ToList();
        Assert.Equal(times.Order(), times);
        return versions.Select(v => v.GetProperty("definition") is { ValueKind: JsonValueKind.Object } d ? d.GetProperty("maps")[0].GetString() : null).ToList();
    }

    [Fact]
    public async Task Every_definition_is_kept_with_its_time_across_a_restart_and_an_identical_put_adds_none()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        await magpie.Http.PutIndexAsync("Posts/History", V1);
        await magpie.Http.PutIndexAsync("Posts/History", V1);
        await magpie.Http.PutIndexAsync("Posts/History", V2);
        Assert.Equal(HttpStatusCode.NoContent, (await magpie.Http.DeleteAsync("indexes/Posts/History")).StatusCode);
        var v1 = JsonDocument.Parse(V1).RootElement.GetProperty("maps")[0].GetString();
        var v2 = JsonDocument.Parse(V2).RootElement.GetProperty("maps")[0].GetString();
        Assert.Equal([v1, v2, null], await HistoryAsync(magpie.Http, "Posts/History"));

        await magpie.StopAsync();
        await magpie.StartAsync();
        Assert.Equal([v1, v2, null], await HistoryAsync(magpie.Http, "Posts/History"));
        // Putting an older one back is an ordinary PUT, and history again.
        await magpie.Http.PutIndexAsync("Posts/History", V1);
        Assert.Equal([v1, v2, null, v1], await HistoryAsync(magpie.Http, "Posts/History"));
        Assert.Equal(HttpStatusCode.NotFound, (await magpie.Http.GetAsync("indexes/Never/history")).StatusCode);
    }
}
