using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;

namespace Magpie.Tests.Operations;

/// <summary>Update and delete by query over HTTP (<c>POST /operations/queries</c>) on the Stack Exchange sample, embedded.</summary>
public sealed class PatchByQueryTests : IAsyncLifetime
{
    private static readonly StackExchangeXml Xml = new(RepoPaths.StackExchangeSample);
    private MagpieProcess _magpie = null!;
    private HttpClient Http => _magpie.Http;

    public async Task InitializeAsync()
    {
        _magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", _magpie.BaseUrl.ToString());
        if (exit != 0) throw new InvalidOperationException(output);
    }

    public async Task DisposeAsync() => await _magpie.DisposeAsync();

    private static Dictionary<string, int> Scores => Xml.Posts.ToDictionary(p => "posts/" + (string)p.Attribute("Id")!, p => (int)p.Attribute("Score")!);

    /// <summary>Starts an operation; returns its id.</summary>
    private async Task<string> StartAsync(object body)
    {
        var r = await Http.PostAsJsonAsync("operations/queries", body);
        Assert.True(r.StatusCode == HttpStatusCode.Accepted, await r.Content.ReadAsStringAsync());
        return (await r.JsonAsync()).GetProperty("operationId").GetString()!;
    }

    /// <summary>The operation once it has ended (or after two minutes, whatever it is).</summary>
    private async Task<JsonElement> EndedAsync(string id)
    {
        var deadline = DateTime.UtcNow.AddMinutes(5);
        while (true)
        {
            var status = await Http.GetFromJsonAsync<JsonElement>($"operations/{id}");
            if (status.GetProperty("state").GetString() != "running" || DateTime.UtcNow > deadline) return status;
            await Task.Delay(100);
        }
    }

    private async Task<string> RawAsync(string id) => await (await Http.GetAsync($"docs/{id}")).Content.ReadAsStringAsync();

    [Fact]
    public async Task An_update_by_query_changes_the_matching_posts_once_and_leaves_the_rest_as_written()
    {
        var scores = Scores;
        var negative = scores.Where(s => s.Value < 0).Select(s => s.Key).ToList();
        Assert.NotEmpty(negative);
        var before = new Dictionary<string, string>();
        foreach (var id in negative.Take(5).Append(scores.Keys.First(k => scores[k] > 0))) before[id] = await RawAsync(id);

        var op = await StartAsync(new { query = "from Posts where Score >= 0 update { this.Score += 1; this.Bumped = true; }" });
        var status = await EndedAsync(op);
        Assert.Equal("completed", status.GetProperty("state").GetString());
        var progress = status.GetProperty("progress");
        Assert.Equal(scores.Count(s => s.Value >= 0), progress.GetProperty("written").GetInt64());
        Assert.Equal(0, progress.GetProperty("failed").GetInt64());

        foreach (var (id, score) in scores)
        {
            var doc = await Http.GetFromJsonAsync<JsonElement>($"docs/{id}");
            Assert.Equal(score >= 0 ? score + 1 : score, doc.GetProperty("Score").GetInt32());
            Assert.Equal(score >= 0, doc.TryGetProperty("Bumped", out _));
        }
        // Posts the query did not match are byte for byte as written; a matched one keeps every field it did not change.
        foreach (var id in negative.Take(5)) Assert.Equal(before[id], await RawAsync(id));
        var changed = before.Keys.Last();
        var was = JsonDocument.Parse(before[changed]).RootElement;
        var now = JsonDocument.Parse(await RawAsync(changed)).RootElement;
        foreach (var p in was.EnumerateObject().Where(p => p.Name is not ("Score" or "@metadata")))
            Assert.Equal(p.Value.GetRawText(), now.GetProperty(p.Name).GetRawText());
        Assert.Equal(op, now.GetProperty("@metadata").GetProperty("@operation").GetString());
    }

    [Fact]
    public async Task A_delete_by_query_deletes_exactly_the_matching_posts()
    {
        var types = Xml.Posts.ToDictionary(p => "posts/" + (string)p.Attribute("Id")!, p => (int)p.Attribute("PostTypeId")!);
        var op = await StartAsync(new { query = "from Posts where PostTypeId = 2 and Score < 0 delete" });
        var status = await EndedAsync(op);
        Assert.Equal("completed", status.GetProperty("state").GetString());
        var scores = Scores;
        var gone = types.Where(t => t.Value == 2 && scores[t.Key] < 0).Select(t => t.Key).ToHashSet();
        Assert.NotEmpty(gone);
        Assert.Equal(gone.Count, status.GetProperty("progress").GetProperty("written").GetInt64());
        foreach (var id in types.Keys)
            Assert.Equal(gone.Contains(id) ? HttpStatusCode.NotFound : HttpStatusCode.OK, (await Http.GetAsync($"docs/{id}")).StatusCode);
    }

    [Fact]
    public async Task An_update_killed_midway_resumes_at_the_next_start_and_ends_as_an_uninterrupted_run()
    {
        // Not idempotent on purpose: a post updated twice would show Bumps = 2. Slow on purpose, so the kill lands midway, but
        // well inside the script's 2 s budget on a loaded machine (a fourfold loop ran past it under a parallel test run).
        var op = await StartAsync(new
        {
            query = "from Posts update { let s = 0; for (let i = 0; i < 50000; i++) s += i; this.Bumps = (this.Bumps || 0) + 1; }",
            operationId = "bump-once",
            // After the kill the index replays the writes made so far before the resumed run reads it: on a loaded
            // machine that takes longer than the default 15 s, which would fail the run as stale (correctly).
            staleTimeoutMs = 120_000,
        });
        var deadline = DateTime.UtcNow.AddMinutes(1);
        while ((await Http.GetFromJsonAsync<JsonElement>($"operations/{op}")).GetProperty("progress").GetProperty("written").GetInt64() < 100)
        {
            Assert.True(DateTime.UtcNow < deadline, "the operation made no progress");
            await Task.Delay(20);
        }
        _magpie.Crash();
        await _magpie.StartAsync();

        var status = await EndedAsync("bump-once");
        Assert.True(status.GetProperty("state").GetString() == "completed", status.ToString());
        Assert.True(status.GetProperty("progress").GetProperty("skipped").GetInt64() >= 100, status.ToString());
        foreach (var id in Scores.Keys)
            Assert.Equal(1, (await Http.GetFromJsonAsync<JsonElement>($"docs/{id}")).GetProperty("Bumps").GetInt32());
        // The same request sent again with its id attaches to the ended operation instead of running twice.
        var again = await Http.PostAsJsonAsync("operations/queries", new { query = "from Posts update { this.Bumps += 1; }", operationId = "bump-once" });
        Assert.Equal(HttpStatusCode.Accepted, again.StatusCode);
        Assert.Equal("completed", (await again.JsonAsync()).GetProperty("status").GetProperty("state").GetString());
    }

    [Fact]
    public async Task Bad_operations_are_refused_with_the_reason_and_a_running_one_can_be_cancelled()
    {
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("operations/queries", new { query = "from Posts where Score > 1" }), HttpStatusCode.BadRequest, "update { … } or delete");
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("operations/queries", new { query = "from Posts update { this.Score += ; }" }), HttpStatusCode.BadRequest, "the update does not parse");
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("queries", new { query = "from Posts delete" }), HttpStatusCode.BadRequest, "POST /operations/queries");
        await HttpJson.AssertProblem(await Http.GetAsync("operations/nope"), HttpStatusCode.NotFound, "does not exist");

        var op = await StartAsync(new { query = "from Posts update { let s = 0; for (let i = 0; i < 2000000; i++) s += i; this.Slow = true; }" });
        Assert.Equal(HttpStatusCode.NoContent, (await Http.DeleteAsync($"operations/{op}")).StatusCode);
        var status = await EndedAsync(op);
        Assert.Equal("cancelled", status.GetProperty("state").GetString());
        Assert.True(status.GetProperty("progress").GetProperty("written").GetInt64() < Scores.Count);
    }
}
