using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Http;

namespace Magpie.Tests.Indexing;

/// <summary>
/// Side-by-side rebuilds, as a user sees them over HTTP (embedded and in Kafka mode): a changed definition is built beside the one
/// serving, queries answer from the serving one until the new one has caught up, then from the new one, and never from a half-built one.
/// </summary>
public static class SideBySideCases
{
    /// <summary>Every post, tagged with the version of the definition that indexed it.</summary>
    public static string Tagged(string version, int work = 0) => JsonSerializer.Serialize(new
    {
        // The work makes a rebuild take a while (about a millisecond per post at 20,000), so queries run while it is half done.
        maps = new[] { $"map('Posts', p => {{ let s = 0; for (let i = 0; i < {work}; i++) s += i; return {{ Score: p.Score, Version: '{version}' }}; }})" },
    });

    /// <summary>
    /// Queries the index again and again while it is redefined (<paramref name="indexes"/>: where definitions are PUT and read) and
    /// switches: every answer holds all <paramref name="posts"/> of one version, the old until the switch and the new after it.
    /// </summary>
    public static async Task A_changed_definition_serves_only_once_built(HttpClient indexes, HttpClient queries, string index, int posts)
    {
        await indexes.PutIndexAsync(index, Tagged("v1"));
        Assert.Equal(posts, (await queries.QueryNonStaleAsync($"from index '{index}' where Version = 'v1'")).GetProperty("totalResults").GetInt32());

        await indexes.PutIndexAsync(index, Tagged("v2", work: 20_000));
        var replacement = await ReplacementAsync(indexes, index);
        Assert.Equal(JsonValueKind.Object, replacement.ValueKind);
        Assert.Contains("'v2'", replacement.GetProperty("definition").GetProperty("maps")[0].GetString());

        var answers = new List<(int V1, int V2)>();
        DateTime? switched = null;
        var deadline = DateTime.UtcNow.AddMinutes(2);
        while (DateTime.UtcNow < deadline && (switched is null || DateTime.UtcNow < switched.Value.AddSeconds(1)))
        {
            answers.Add(await CountsAsync(queries, index));
            if (switched is null && (await ReplacementAsync(indexes, index)).ValueKind == JsonValueKind.Null) switched = DateTime.UtcNow;
        }
        Assert.True(switched is not null, "the replacement never switched in");
        // Never a half-built index: each answer is all of one version; v1 first, then v2 (a version never comes back).
        if (answers.Any(a => a != (posts, 0) && a != (0, posts)))
            Assert.Fail($"answers mixed or missed posts ({string.Join(", ", answers.Distinct().Select(a => $"v1 {a.V1} v2 {a.V2}"))} of {posts}); " +
                $"the index now: {await indexes.GetStringAsync($"indexes/{index}")}");
        Assert.Contains((posts, 0), answers);
        var firstV2 = answers.IndexOf((0, posts));
        Assert.True(firstV2 > 0, "no answer came from the new version");
        Assert.All(answers.Skip(firstV2), a => Assert.Equal((0, posts), a));

        var status = await (await indexes.GetAsync($"indexes/{index}")).JsonAsync();
        Assert.Contains("'v2'", status.GetProperty("definition").GetProperty("maps")[0].GetString());
    }

    /// <summary>How many posts each version answers for, in one query.</summary>
    private static async Task<(int V1, int V2)> CountsAsync(HttpClient queries, string index)
    {
        var r = await queries.PostAsJsonAsync("queries", new
        {
            query = $"from index '{index}' where Version in ('v1', 'v2') select facet(Version)",
            timeoutMs = 30_000,
        });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var facets = (await r.JsonAsync()).GetProperty("facets")[0].GetProperty("values").EnumerateArray()
            .ToDictionary(v => v.GetProperty("value").GetString()!, v => v.GetProperty("count").GetInt32());
        return (facets.GetValueOrDefault("v1"), facets.GetValueOrDefault("v2"));
    }

    /// <summary>The replacement being built (null once there is none).</summary>
    public static async Task<JsonElement> ReplacementAsync(HttpClient indexes, string index)
    {
        var r = await indexes.GetAsync($"indexes/{index}");
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        return (await r.JsonAsync()).GetProperty("replacement");
    }

    /// <summary>
    /// A slow replacement swapped in by hand serves at once; putting the serving definition back cancels a replacement; the same
    /// replacement put again changes nothing; a swap with nothing to swap is a 409.
    /// </summary>
    public static async Task A_replacement_is_swapped_in_or_cancelled_by_hand(HttpClient indexes, HttpClient queries, string index)
    {
        await indexes.PutIndexAsync(index, Tagged("v1"));
        await queries.QueryNonStaleAsync($"from index '{index}' where Version = 'v1'");
        await HttpJson.AssertProblem(await indexes.PostAsync($"indexes/{index}/swap", null), HttpStatusCode.Conflict, "no replacement");

        // Put back the serving definition: the replacement goes.
        await indexes.PutIndexAsync(index, Tagged("v2", work: 2_000_000));
        await indexes.PutIndexAsync(index, Tagged("v2", work: 2_000_000));   // the same replacement again: no-op
        Assert.Equal(JsonValueKind.Object, (await ReplacementAsync(indexes, index)).ValueKind);
        await indexes.PutIndexAsync(index, Tagged("v1"));
        Assert.Equal(JsonValueKind.Null, (await ReplacementAsync(indexes, index)).ValueKind);

        // Swapped in by hand, half built: it serves now (what it has indexed so far).
        await indexes.PutIndexAsync(index, Tagged("v3", work: 2_000_000));
        Assert.Equal(HttpStatusCode.NoContent, (await indexes.PostAsync($"indexes/{index}/swap", null)).StatusCode);
        Assert.Equal(JsonValueKind.Null, (await ReplacementAsync(indexes, index)).ValueKind);
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (true)
        {
            var (v1, v3) = (await CountAsync(queries, index, "v1"), await CountAsync(queries, index, "v3"));
            if (v1 == 0) break;
            Assert.True(DateTime.UtcNow < deadline, $"still answering from v1 after the swap ({v1} v1, {v3} v3)");
            await Task.Delay(100);
        }
        await indexes.PutIndexAsync(index, Tagged("v1"));   // back to a quick one, side by side again
    }

    private static async Task<int> CountAsync(HttpClient queries, string index, string version)
    {
        var r = await queries.PostAsJsonAsync("queries", new { query = $"from index '{index}' where Version = '{version}'", pageSize = 0, timeoutMs = 30_000 });
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        return (await r.JsonAsync()).GetProperty("totalResults").GetInt32();
    }
}
