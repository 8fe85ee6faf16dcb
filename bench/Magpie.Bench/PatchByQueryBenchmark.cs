using System.Diagnostics;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Producers;

namespace Magpie.Bench;

/// <summary>
/// The patch-by-query figure: <c>from Posts update { this.Score += 1; }</c> over every synthetic post through
/// <c>POST /operations/queries</c>, against a client sending the same changes itself with <c>POST /bulk_docs</c> (each post with its
/// Score one higher, bodies serialized before the clock starts).
/// </summary>
public static class PatchByQueryBenchmark
{
    public const string Update = "from Posts update { this.Score += 1; }";

    /// <summary>Runs the operation; returns documents written and the time from the request until it completed.</summary>
    public static async Task<(long Written, TimeSpan Elapsed)> OperationAsync(HttpClient http)
    {
        var watch = Stopwatch.StartNew();
        var r = await http.PostAsJsonAsync("operations/queries", new { query = Update, staleTimeoutMs = 300_000 });
        if (!r.IsSuccessStatusCode) throw new InvalidOperationException(await r.Content.ReadAsStringAsync());
        var id = (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("operationId").GetString();
        while (true)
        {
            var status = await http.GetFromJsonAsync<JsonElement>($"operations/{id}");
            if (status.GetProperty("state").GetString() is not "running")
            {
                if (status.GetProperty("state").GetString() != "completed") throw new InvalidOperationException(status.ToString());
                return (status.GetProperty("progress").GetProperty("written").GetInt64(), watch.Elapsed);
            }
            await Task.Delay(20);
        }
    }

    /// <summary>The same change as bulk PUTs: every post of <paramref name="batches"/> with its Score plus one.</summary>
    public static IReadOnlyList<DocumentWrite[]> Bumped(IReadOnlyList<DocumentWrite[]> batches) =>
        batches.Select(b => b.Select(w =>
        {
            var doc = JsonNode.Parse(w.Body!)!.AsObject();
            doc["Score"] = doc["Score"]!.GetValue<int>() + 1;
            return DocumentWrite.Put(w.Id, Encoding.UTF8.GetBytes(doc.ToJsonString()));
        }).ToArray()).ToList();
}
