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
        Assert.Equal(["documents", "change-feed", "sinks"], health.GetProperty("modules").EnumerateArray().Select(m => m.GetString()).ToList());
        // Both modules answer; the indexer's and the query module's routes are not there.
        Assert.Equal(HttpStatusCode.Created, (await magpie.Http.PutAsync("users/1", """{"Name":"Ada"}""")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await magpie.Http.GetAsync("etl/tasks")).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await magpie.Http.PostAsJsonAsync("queries", new { query = "from users" })).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await magpie.Http.GetAsync("indexes")).StatusCode);
    }

    [Fact]
    public async Task List_targets_draws_the_module_graph_and_a_bad_combination_is_refused()
    {
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "run", "--list-targets");
        Assert.Equal(0, exit);
        var lines = output.Split('\n').Select(l => l.Trim()).ToList();
        // Each target with the modules it runs, dependencies first; each module with what it needs.
        Assert.Contains("indexer  runs index-definitions, indexer, shard-search", lines);
        Assert.Contains("query    runs index-definitions, document-filters, query, postgres, studio", lines);
        Assert.Contains(lines, l => l.StartsWith("all      runs documents, change-feed, index-definitions, document-filters, indexer, shard-search, query, postgres, studio, sinks", StringComparison.Ordinal));
        Assert.Contains(lines, l => l.StartsWith("shard-search ", StringComparison.Ordinal) && l.Contains("needs indexer;"));
        Assert.Contains(lines, l => l.StartsWith("postgres ", StringComparison.Ordinal) && l.Contains("needs query;"));
        Assert.Contains("ingest   runs documents, change-feed", lines);
        Assert.Contains(lines, l => l.StartsWith("change-feed ", StringComparison.Ordinal) && l.Contains("needs documents;"));
        // Without ingest, the indexer reads the change feed from Kafka: combined without --kafka, one line says so.
        var (badExit, bad) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "run", "--target", "indexer,query", "--http-port", FreePort.Next().ToString());
        Assert.NotEqual(0, badExit);
        Assert.Contains("module 'indexer' can't start: the indexer target alone reads magpie.changes from Kafka: set --kafka", bad);
        var (unknownExit, unknown) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "run", "--target", "indexer,search", "--http-port", FreePort.Next().ToString());
        Assert.NotEqual(0, unknownExit);
        Assert.Contains("unknown target 'search'", unknown);
    }
}
