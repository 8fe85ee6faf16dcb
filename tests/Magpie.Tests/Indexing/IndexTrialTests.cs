using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Http;
using Magpie.Tests.Queries.Conformance;

namespace Magpie.Tests.Indexing;

/// <summary>POST /indexes/test: a definition tried on a sample of the real documents — entries, reduce results and errors — and nothing created.</summary>
public sealed class IndexTrialTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>
{
    private HttpClient Http => fx.Magpie.Http;

    private async Task<JsonElement> TryAsync(object body)
    {
        var r = await Http.PostAsJsonAsync("indexes/test", body);
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        return await r.JsonAsync();
    }

    [Fact]
    public async Task A_map_tried_on_a_sample_gives_each_documents_entries_and_creates_nothing()
    {
        var before = (await Http.GetFromJsonAsync<JsonElement>("indexes")).GetArrayLength();
        var result = await TryAsync(new
        {
            definition = new { maps = new[] { "map('Posts', p => ({ Title: p.Title || null, Owner: p.OwnerUserId ? 'users/' + p.OwnerUserId : null, Score: p.Score }))" } },
            sampleSize = 25,
        });
        Assert.Equal(25, result.GetProperty("documents").GetInt32());
        var posts = fx.Posts.ToDictionary(p => p.Id);
        var entries = result.GetProperty("entries").EnumerateArray().ToList();
        Assert.Equal(25, entries.Count);
        foreach (var e in entries)
        {
            var post = posts[e.GetProperty("id").GetString()!];
            var entry = e.GetProperty("entries").EnumerateArray().Single();
            Assert.Equal(post.Title, entry.GetProperty("Title").GetString());
            Assert.Equal(post.Owner is { } owner ? $"users/{owner}" : null, entry.GetProperty("Owner").GetString());
            Assert.Equal(post.Score, entry.GetProperty("Score").GetDouble());
        }
        Assert.Empty(result.GetProperty("errors").EnumerateArray());
        Assert.Equal(before, (await Http.GetFromJsonAsync<JsonElement>("indexes")).GetArrayLength());
    }

    [Fact]
    public async Task A_map_reduce_tried_on_a_sample_reduces_its_entries_and_reports_each_failing_document()
    {
        var result = await TryAsync(new
        {
            definition = new
            {
                maps = new[] { "map('Posts', p => ({ Type: p.PostTypeId, Count: 1, TitleLength: p.Title.length }))" },
                reduce = "groupBy(x => x.Type).aggregate(g => ({ Type: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0), TitleLength: g.values.reduce((n, v) => n + v.TitleLength, 0) }))",
            },
            sampleSize = 200,
        });
        var sampled = result.GetProperty("entries").EnumerateArray().Select(e => e.GetProperty("id").GetString()!)
            .Concat(result.GetProperty("errors").EnumerateArray().Select(e => e.GetProperty("id").GetString()!)).ToList();
        Assert.Equal(200, sampled.Count);
        // Answers have no title: each is an error naming the TypeError; the questions reduce by type.
        var posts = fx.Posts.ToDictionary(p => p.Id);
        var failing = result.GetProperty("errors").EnumerateArray().ToList();
        Assert.Equal(sampled.Count(id => posts[id].Title is null), failing.Count);
        Assert.All(failing, f => Assert.Contains("TypeError", f.GetProperty("error").GetString()));
        var reduced = result.GetProperty("reduced").EnumerateArray().ToDictionary(r => r.GetProperty("Type").GetInt32(), r => r.GetProperty("Count").GetInt32());
        var expected = sampled.Where(id => posts[id].Title is not null).GroupBy(id => posts[id].Type).ToDictionary(g => g.Key, g => g.Count());
        Assert.Equal(expected, reduced);
    }

    [Theory]
    [InlineData("""{ "definition": { "maps": ["map('Posts', p => ({ A: p. }))"] } }""", "maps[0]")]
    [InlineData("""{ "definition": { "maps": ["map('Posts', p => ({ A: 1 }))"] }, "sampleSize": 0 }""", "sampleSize must be 1 to 1,000")]
    [InlineData("""{ "sampleSize": 5 }""", "body needs \"definition\"")]
    public async Task A_definition_or_sample_that_cannot_be_tried_is_a_400(string body, string expected) =>
        await HttpJson.AssertProblem(await Http.PostAsync("indexes/test", HttpJson.Json(body)), HttpStatusCode.BadRequest, expected);

    [Fact]
    public async Task A_trial_whose_entries_grow_without_end_is_refused_before_it_holds_them()
    {
        // ~2,000 fields of 1 KB per document over 1,000 documents would be gigabytes of answer.
        var map = "map('Posts', p => { const e = {}; for (let i = 0; i < 2000; i++) e['F' + i] = 'x'.repeat(1000) + i; return e; })";
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("indexes/test", new { definition = new { maps = new[] { map } }, sampleSize = 1000 }),
            HttpStatusCode.UnprocessableEntity, "the trial's entries grew past 16 MiB");
        Assert.True((await Http.GetAsync("stats")).IsSuccessStatusCode);
    }

    [Fact]
    public async Task A_trial_whose_maps_never_finish_stops_at_its_time_budget()
    {
        var started = System.Diagnostics.Stopwatch.StartNew();
        await HttpJson.AssertProblem(await Http.PostAsJsonAsync("indexes/test", new { definition = new { maps = new[] { "map('Posts', p => { while (true) {} })" } }, sampleSize = 1000 }),
            HttpStatusCode.UnprocessableEntity, "the trial ran out of its 10 s");
        // Not a timing test: the budget is 10 s, a run over every document at its own 2 s timeout would take half an hour.
        Assert.True(started.Elapsed < TimeSpan.FromMinutes(2), started.Elapsed.ToString());
    }

    [Fact]
    public async Task Vectors_float32_cannot_compare_fail_their_document()
    {
        var result = await TryAsync(new
        {
            definition = new { maps = new[] { "map('Posts', p => ({ V: createVector(p.Score > 10 ? [1e39, 1] : p.Score > 5 ? [1e-30, 0] : [p.Score, 1]) }))" } },
            sampleSize = 200,
        });
        var errors = result.GetProperty("errors").EnumerateArray().Select(e => e.GetProperty("error").GetString()!).ToList();
        var posts = fx.Posts.ToDictionary(p => p.Id);
        var sampled = result.GetProperty("errors").EnumerateArray().Select(e => posts[e.GetProperty("id").GetString()!])
            .Concat(result.GetProperty("entries").EnumerateArray().Select(e => posts[e.GetProperty("id").GetString()!])).ToList();
        Assert.Equal(sampled.Count(p => p.Score > 10), errors.Count(e => e.Contains("createVector takes numbers within float32's range")));
        Assert.Equal(sampled.Count(p => p.Score is > 5 and <= 10), errors.Count(e => e.Contains("too short for float32 arithmetic")));
    }
}
