using System.Net;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;
using Magpie.Tests.Queries;

namespace Magpie.Tests.Indexing;

/// <summary>
/// <c>load()</c> in maps, embedded, on the Stack Exchange sample: posts indexed with their owner's DisplayName follow the owner —
/// renamed, deleted, created late — across a restart.
/// </summary>
public sealed class LoadDocumentTests(ImportedSampleFixture fx) : IClassFixture<ImportedSampleFixture>
{
    private static readonly StackExchangeXml Xml = new(RepoPaths.StackExchangeSample);
    private HttpClient Http => fx.Magpie.Http;

    private const string Index = "Posts/WithOwner";

    [Fact]
    public Task Posts_answer_with_their_owners_current_name_renamed_deleted_or_created_late() =>
        LoadDocumentCases.Posts_follow_their_owner(Http, Http, Http, Index, async () => { await fx.Magpie.StopAsync(); await fx.Magpie.StartAsync(); }, () => Task.CompletedTask);

    [Fact]
    public async Task A_map_reduce_index_counts_posts_per_owner_name_and_follows_a_rename()
    {
        await Http.PutIndexAsync("Posts/PerOwnerName", """
            {
              "maps": ["map('Posts', p => { const u = p.OwnerUserId ? load('users/' + p.OwnerUserId) : null; return { Owner: u ? u.DisplayName : 'nobody', Count: 1 }; })"],
              "reduce": "groupBy(x => x.Owner).aggregate(g => ({ Owner: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0) }))"
            }
            """);
        var names = Xml.Users.ToDictionary(u => (int)u.Attribute("Id")!, u => (string)u.Attribute("DisplayName")!);
        var perOwner = Xml.Posts.Where(p => p.Attribute("OwnerUserId") is not null).GroupBy(p => (int)p.Attribute("OwnerUserId")!).ToDictionary(g => g.Key, g => g.Count());
        // The second busiest owner with a name of their own (the other test of this class renames the busiest).
        var owner = perOwner.Where(o => names.ContainsKey(o.Key) && names.Values.Count(n => n == names[o.Key]) == 1)
            .OrderByDescending(o => o.Value).Skip(1).First().Key;
        async Task<int?> CountAsync(string name)
        {
            var r = await Http.QueryNonStaleAsync($"from index 'Posts/PerOwnerName' where Owner = {JsonSerializer.Serialize(name).Replace('"', '\'')}");
            return r.GetProperty("results").EnumerateArray().Select(x => (int?)x.GetProperty("Count").GetInt32()).SingleOrDefault();
        }
        Assert.Equal(perOwner[owner], await CountAsync(names[owner]));
        Assert.True((await Http.PatchAsync($"users/{owner}", """[{"op":"replace","path":"/DisplayName","value":"Counted Anew"}]""")).IsSuccessStatusCode);
        Assert.Equal(perOwner[owner], await CountAsync("Counted Anew"));
        Assert.Null(await CountAsync(names[owner]));
    }
}
