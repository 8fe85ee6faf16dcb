using System.Net;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Queries;

namespace Magpie.Tests.Indexing;

/// <summary>Side-by-side rebuilds embedded, on the Stack Exchange sample (Kafka mode: <c>KafkaConformanceTests</c>).</summary>
public sealed class SideBySideTests(ImportedSampleFixture fx) : IClassFixture<ImportedSampleFixture>
{
    private HttpClient Http => fx.Magpie.Http;

    [Fact]
    public Task Queries_under_load_answer_from_the_old_version_until_the_new_one_has_caught_up() =>
        SideBySideCases.A_changed_definition_serves_only_once_built(Http, Http, "Posts/SideBySide", fx.Posts.Count);

    [Fact]
    public Task A_replacement_is_swapped_in_or_cancelled_by_hand() =>
        SideBySideCases.A_replacement_is_swapped_in_or_cancelled_by_hand(Http, Http, "Posts/Swapped");

    [Fact]
    public async Task An_output_collection_changes_owner_at_the_switch_and_keeps_only_the_new_versions_documents()
    {
        static string Definition(string key, int work) => JsonSerializer.Serialize(new
        {
            maps = new[] { $"map('Posts', p => {{ let s = 0; for (let i = 0; i < {work}; i++) s += i; return {{ Key: {key}, Count: 1 }}; }})" },
            reduce = "groupBy(x => x.Key).aggregate(g => ({ Key: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0) }))",
            outputReduceToCollection = "PostCounts",
        });
        var byType = fx.Posts.GroupBy(p => (string)p.Attribute("PostTypeId")!).ToDictionary(g => g.Key, g => g.Count());
        var byYear = fx.Posts.GroupBy(p => ((string)p.Attribute("CreationDate")!)[..4]).ToDictionary(g => g.Key, g => g.Count());

        await Http.PutIndexAsync("Posts/Counts", Definition("String(p.PostTypeId)", 0));
        await Http.QueryNonStaleAsync("from index 'Posts/Counts'");
        await AssertOutputAsync(byType, absent: byYear.Keys);

        // The replacement builds without writing: the collection stays the serving version's, restart or not.
        await Http.PutIndexAsync("Posts/Counts", Definition("p.CreationDate.substring(0, 4)", 5_000));
        await fx.Magpie.StopAsync();
        await fx.Magpie.StartAsync();
        Assert.Equal(JsonValueKind.Object, (await SideBySideCases.ReplacementAsync(Http, "Posts/Counts")).ValueKind);
        await AssertOutputAsync(byType, absent: byYear.Keys);

        var deadline = DateTime.UtcNow.AddMinutes(2);
        while ((await SideBySideCases.ReplacementAsync(Http, "Posts/Counts")).ValueKind != JsonValueKind.Null)
        {
            Assert.True(DateTime.UtcNow < deadline, "the replacement never switched in");
            await Task.Delay(200);
        }
        // At the switch: every result of the new version written, the documents of keys only the old one had deleted.
        deadline = DateTime.UtcNow.AddSeconds(30);
        while (true)
        {
            try
            {
                await AssertOutputAsync(byYear, absent: byType.Keys);
                break;
            }
            catch (Xunit.Sdk.XunitException) when (DateTime.UtcNow < deadline) { await Task.Delay(200); }
        }
    }

    [Fact]
    public async Task A_kill_right_after_the_switch_still_leaves_only_the_new_versions_output_documents()
    {
        // The probe's: kill -9 ~50 ms after the swap left the old version's documents in the collection for good (3 of 3 runs).
        static string Definition(string key) => JsonSerializer.Serialize(new
        {
            maps = new[] { $"map('Posts', p => ({{ Key: {key}, Count: 1 }}))" },
            reduce = "groupBy(x => x.Key).aggregate(g => ({ Key: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0) }))",
            outputReduceToCollection = "KilledCounts",
        });
        var byType = fx.Posts.GroupBy(p => (string)p.Attribute("PostTypeId")!).ToDictionary(g => g.Key, g => g.Count());
        var byYear = fx.Posts.GroupBy(p => ((string)p.Attribute("CreationDate")!)[..4]).ToDictionary(g => g.Key, g => g.Count());
        await Http.PutIndexAsync("Posts/KilledCounts", Definition("String(p.PostTypeId)"));
        await Http.QueryNonStaleAsync("from index 'Posts/KilledCounts'");
        await AssertOutputAsync(byType, absent: byYear.Keys, collection: "KilledCounts");

        await Http.PutIndexAsync("Posts/KilledCounts", Definition("p.CreationDate.substring(0, 4)"));
        var deadline = DateTime.UtcNow.AddMinutes(2);
        while ((await SideBySideCases.ReplacementAsync(Http, "Posts/KilledCounts")).ValueKind != JsonValueKind.Null)
        {
            Assert.True(DateTime.UtcNow < deadline, "the replacement never switched in");
            await Task.Delay(5);
        }
        fx.Magpie.Crash();
        await fx.Magpie.StartAsync();
        await Http.QueryNonStaleAsync("from index 'Posts/KilledCounts'");
        deadline = DateTime.UtcNow.AddSeconds(30);
        while (true)
        {
            try
            {
                await AssertOutputAsync(byYear, absent: byType.Keys, collection: "KilledCounts");
                break;
            }
            catch (Xunit.Sdk.XunitException) when (DateTime.UtcNow < deadline) { await Task.Delay(200); }
        }
    }

    private async Task AssertOutputAsync(Dictionary<string, int> present, IEnumerable<string> absent, string collection = "PostCounts")
    {
        foreach (var (key, count) in present)
        {
            var r = await Http.GetAsync($"docs/{collection}/{key}");
            Assert.True(r.StatusCode == HttpStatusCode.OK, $"{collection}/{key}: {(int)r.StatusCode}");
            Assert.Equal(count, (await r.JsonAsync()).GetProperty("Count").GetInt32());
        }
        foreach (var key in absent)
            Assert.True((await Http.GetAsync($"docs/{collection}/{key}")).StatusCode == HttpStatusCode.NotFound, $"{collection}/{key} should not exist");
    }
}
