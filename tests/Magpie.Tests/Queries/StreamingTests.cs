using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Queries;

/// <summary>
/// 100,000 synthetic posts streamed to a reader that stops reading for 8 s (longer than Kestrel's 5 s grace
/// period). Note: Kestrel times a stalled write as size / MinResponseDataRate + grace, and the stream
/// flushes whole pages, so even with the default rate this pause would not abort it (checked by removing
/// the rate override: the test still passes). The stream turns the rate off anyway, for readers slower still.
/// While the reader pauses, new posts that sort into the part not yet streamed are indexed: the stream reads
/// one snapshot of the index, so none of them appear; a client that goes away releases its snapshot at once.
/// </summary>
public sealed class StreamingTests
{
    [Fact]
    public async Task A_reader_that_pauses_mid_stream_gets_all_100k_results_in_order()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "synthetic", "--count", "100000", "--seed", "3", "--url", magpie.BaseUrl.ToString());
        Assert.True(exit == 0, output);
        var put = await magpie.Http.PutAsync("indexes/Posts/ByScore", HttpJson.Json("""{"maps":["map('Posts', p => ({ Score: p.Score, Type: p.PostTypeId }))"]}"""));
        Assert.Equal(HttpStatusCode.NoContent, put.StatusCode);
        var ready = await magpie.Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByScore' limit 1", waitForNonStaleResults = true, timeoutMs = 120_000 });
        Assert.Equal(100_000, (await ready.JsonAsync()).GetProperty("totalResults").GetInt64());

        using var request = new HttpRequestMessage(HttpMethod.Post, "streams/queries")
        {
            Content = JsonContent.Create(new { query = "from index 'Posts/ByScore' order by Score desc" }),
        };
        using var response = await magpie.Http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead);
        Assert.Equal("application/x-ndjson", response.Content.Headers.ContentType?.MediaType);
        using var reader = new StreamReader(await response.Content.ReadAsStreamAsync());
        var ids = new HashSet<string>();
        long? previousScore = null;
        var ordered = true;
        while (await reader.ReadLineAsync() is { } line)
        {
            var doc = JsonDocument.Parse(line).RootElement;
            ids.Add(doc.GetProperty("@metadata").GetProperty("@id").GetString()!);
            var score = doc.GetProperty("Score").GetInt64();
            ordered &= previousScore is null || score <= previousScore;
            previousScore = score;
            // Stop reading for 8 s early on: the server's sends stall (Kestrel's grace period for MinResponseDataRate is 5 s).
            if (ids.Count != 2_000) continue;
            var paused = DateTime.UtcNow;
            Assert.Equal(1, await HeldSnapshotsAsync(magpie));
            for (var i = 0; i < 20; i++)
            {
                var late = await magpie.Http.PutAsync($"docs/posts/late-{i}?waitForIndexes=true", HttpJson.Json($$"""{"Score":{{-1_000_000 + i}},"PostTypeId":1}"""));
                Assert.Equal("current", late.Headers.GetValues("Magpie-Indexes").Single());
            }
            await Task.Delay(TimeSpan.FromSeconds(8) - (DateTime.UtcNow - paused));
        }
        Assert.Equal(100_000, ids.Count);
        Assert.DoesNotContain(ids, id => id.StartsWith("posts/late-", StringComparison.Ordinal));
        Assert.True(ordered, "the stream is in the query's order");
        Assert.Equal(0, await HeldSnapshotsAsync(magpie));

        // Without a snapshot the late posts are there; a client that leaves mid-stream lets its snapshot go.
        var now = await magpie.Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/ByScore' where Score < -900000" });
        Assert.Equal(20, (await now.JsonAsync()).GetProperty("totalResults").GetInt64());
        using (var leaving = await magpie.Http.SendAsync(new HttpRequestMessage(HttpMethod.Post, "streams/queries")
               {
                   Content = JsonContent.Create(new { query = "from index 'Posts/ByScore' order by Score desc" }),
               }, HttpCompletionOption.ResponseHeadersRead))
        {
            using var partial = new StreamReader(await leaving.Content.ReadAsStreamAsync());
            for (var i = 0; i < 10; i++) Assert.NotNull(await partial.ReadLineAsync());
            Assert.Equal(1, await HeldSnapshotsAsync(magpie));
        }
        var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(10);
        while (await HeldSnapshotsAsync(magpie) != 0 && DateTime.UtcNow < deadline) await Task.Delay(50);
        Assert.Equal(0, await HeldSnapshotsAsync(magpie));
    }

    private static async Task<int> HeldSnapshotsAsync(MagpieProcess magpie) =>
        (await magpie.Http.GetFromJsonAsync<JsonElement>("indexes/Posts/ByScore")).GetProperty("status").GetProperty("heldSnapshots").GetInt32();
}
