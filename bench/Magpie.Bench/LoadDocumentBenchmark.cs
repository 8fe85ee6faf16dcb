using System.Diagnostics;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Producers;

namespace Magpie.Bench;

/// <summary>
/// LoadDocument figures: indexing the synthetic posts with a map that loads each post's owner (<c>users/{OwnerUserId}</c>)
/// against the same map without the load, and the seconds from renaming the user who owns most posts until every one of them
/// answers with the new name.
/// </summary>
public static class LoadDocumentBenchmark
{
    public const string Plain = "Bench/Owners", Loading = "Bench/OwnerNames";

    public static readonly IndexDefinition PlainDefinition = new() { Maps = ["map('Posts', p => ({ Owner: 'user ' + p.OwnerUserId, Score: p.Score }))"] };

    public static readonly IndexDefinition LoadingDefinition = new()
    {
        Maps = ["map('Posts', p => { const u = load('users/' + p.OwnerUserId, 'Users'); return { Owner: u ? u.DisplayName : null, Score: p.Score }; })"],
    };

    /// <summary>The users the synthetic posts' OwnerUserId point at (1 to 50,000), each named "user N".</summary>
    public static IReadOnlyList<DocumentWrite[]> Users(int count = 50_000) =>
        Enumerable.Range(1, count).Select(i => DocumentWrite.Put($"users/{i}", Encoding.UTF8.GetBytes($$"""{"DisplayName":"user {{i}}","Reputation":{{i % 1000}}}""")))
            .Chunk(1000).ToList();

    /// <summary>Defines the index and times it until it holds every post.</summary>
    public static async Task<TimeSpan> IndexAsync(HttpClient http, string name, IndexDefinition definition, long posts)
    {
        var watch = Stopwatch.StartNew();
        await IndexBenchmark.DefineAsync(http, name, definition);
        await IndexBenchmark.WaitIndexedAsync([http], posts, TimeSpan.FromMinutes(60), name);
        return watch.Elapsed;
    }

    private static async Task<long> CountAsync(HttpClient http, string owner)
    {
        var r = await http.PostAsJsonAsync("queries", new { query = $"from index '{Loading}' where Owner = $o", parameters = new { o = owner }, pageSize = 0 });
        r.EnsureSuccessStatusCode();
        return (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("totalResults").GetInt64();
    }

    /// <summary>Renames user 1 (the skewed generator's busiest owner); how many posts it owns and the time until all answer the new name.</summary>
    public static async Task<(long Posts, TimeSpan Elapsed)> RenameAsync(HttpClient http)
    {
        var posts = await CountAsync(http, "user 1");
        var watch = Stopwatch.StartNew();
        using var patch = new HttpRequestMessage(HttpMethod.Patch, "docs/users/1")
        {
            Content = new StringContent("""[{"op":"replace","path":"/DisplayName","value":"renamed user"}]""", Encoding.UTF8, "application/json-patch+json"),
        };
        (await http.SendAsync(patch)).EnsureSuccessStatusCode();
        while (await CountAsync(http, "renamed user") < posts)
        {
            if (watch.Elapsed > TimeSpan.FromMinutes(10)) throw new TimeoutException("the rename never reached every post");
            await Task.Delay(5);
        }
        return (posts, watch.Elapsed);
    }
}
