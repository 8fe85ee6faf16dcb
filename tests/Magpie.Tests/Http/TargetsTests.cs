using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Http;

/// <summary>Targets combined as Loki combines them: <c>--target ingest,sinks</c> runs both modules in one process, and only them.</summary>
public sealed class TargetsTests
{
    [Fact]
    public async Task Ingest_and_sinks_run_together_in_one_process_without_the_other_modules()
    {
        await using var magpie = await MagpieProcess.StartAsync(target: "ingest,sinks");
        var health = await magpie.Http.GetFromJsonAsync<JsonElement>("health");
        Assert.Equal("ingest,sinks", health.GetProperty("target").GetString());
        Assert.Equal(["ingest", "sinks"], health.GetProperty("modules").EnumerateArray().Select(m => m.GetString()).ToList());
        // Both modules answer; the indexer's and the query module's routes are not there.
        Assert.Equal(HttpStatusCode.Created, (await magpie.Http.PutAsync("users/1", """{"Name":"Ada"}""")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await magpie.Http.GetAsync("etl/tasks")).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await magpie.Http.PostAsJsonAsync("queries", new { query = "from users" })).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await magpie.Http.GetAsync("indexes")).StatusCode);
    }

    [Fact]
    public async Task List_targets_says_each_target_its_modules_and_needs_and_a_bad_combination_is_refused()
    {
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "run", "--list-targets");
        Assert.Equal(0, exit);
        foreach (var target in new[] { "all", "ingest", "indexer", "query", "sinks", "ingest,…" })
            Assert.Contains(output.Split('\n'), line => line.StartsWith(target + " ", StringComparison.Ordinal) && line.Contains("needs: "));
        var (badExit, bad) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "run", "--target", "indexer,query", "--http-port", FreePort.Next().ToString());
        Assert.NotEqual(0, badExit);
        Assert.Contains("run them as separate processes, or add ingest", bad);
    }
}
