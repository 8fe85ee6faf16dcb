using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Contracts;
using Magpie.Http;

namespace Magpie.Query.Shards;

/// <summary>An indexer process holding shards, asked over HTTP (<c>POST /shards/queries</c>); its problems come back as the same problems.</summary>
public sealed class RemoteShardOwner(HttpClient http, string baseUrl) : IShardOwner
{
    public string Name => baseUrl;

    public async Task ReleaseAsync(string snapshot)
    {
        // Best effort: an unreachable owner's lease expires by itself (SnapshotLeases.KeepAlive).
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(5));
        try { (await http.DeleteAsync(new Uri(new Uri(baseUrl), $"shards/snapshots/{Uri.EscapeDataString(snapshot)}"), cts.Token)).Dispose(); }
        catch (Exception e) when (e is HttpRequestException or OperationCanceledException) { }
    }

    public async Task<ShardPage> SearchAsync(ShardQuery query, CancellationToken ct)
    {
        HttpResponseMessage response;
        try { response = await http.PostAsJsonAsync(new Uri(new Uri(baseUrl), "shards/queries"), query, WireJson.Web, ct); }
        catch (HttpRequestException e) { throw new QueryProblem(ErrorKind.Unavailable, $"indexer {baseUrl} is unreachable: {e.Message}"); }
        using (response)
        {
            if (response.IsSuccessStatusCode)
                return await response.Content.ReadFromJsonAsync<ShardPage>(WireJson.Web, ct)
                    ?? throw new QueryProblem(ErrorKind.BadUpstream, $"indexer {baseUrl} answered with nothing");
            JsonElement problem = default;
            try { problem = await response.Content.ReadFromJsonAsync<JsonElement>(ct); }
            catch (JsonException) { }
            string? Text(string p) => problem.ValueKind == JsonValueKind.Object && problem.TryGetProperty(p, out var v) ? v.ToString() : null;
            int? Number(string p) => int.TryParse(Text(p), out var n) ? n : null;
            throw new QueryProblem(Problems.KindOf((int)response.StatusCode), Text("detail") ?? $"indexer {baseUrl} answered {(int)response.StatusCode}",
                Number("line"), Number("column")) { Code = Text("code") };
        }
    }
}
