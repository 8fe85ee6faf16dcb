using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Magpie.Contracts;
using Magpie.Contracts.Documents;

namespace Magpie.Http;

/// <summary>
/// Kafka mode: a process without the document store (query, indexer) reads and writes documents through an ingest process over
/// HTTP (<c>IngestUrl</c>), with this deployment's service key. Writes go to <c>POST /bulk_docs</c>, whose batches are all or nothing: a command refused there (its
/// <c>index</c> in the problem) gets its outcome and the rest of the batch is sent again.
/// </summary>
public sealed class IngestClient(string baseUrl, HttpClient http) : IDocumentWriter, IDocumentLookup, IMessageWriter, Contracts.Changes.IRelayedChanges
{
    private readonly Uri _base = new(baseUrl.EndsWith('/') ? baseUrl : baseUrl + "/");

    public async ValueTask<JsonElement?> GetAsync(string id, CancellationToken ct = default)
    {
        HttpResponseMessage response;
        try { response = await http.GetAsync(new Uri(_base, "docs?id=" + Uri.EscapeDataString(id)), ct); }
        catch (Exception e) when (e is HttpRequestException || e is TaskCanceledException && !ct.IsCancellationRequested)
        {
            throw new IngestUnavailableException($"ingest at {baseUrl} did not answer: {e.Message}");
        }
        using var _ = response;
        if (response.StatusCode == HttpStatusCode.NotFound) return null;
        await EnsureAsync(response, ct);
        return await response.Content.ReadFromJsonAsync<JsonElement>(WireJson.Web, ct);
    }

    /// <summary>
    /// The collection's documents whose <c>@metadata</c> holds <paramref name="version"/> under <paramref name="metadata"/>,
    /// read through ingest's <c>GET /docs?collection=</c> a page of 1,024 at a time.
    /// </summary>
    public async Task<IReadOnlyList<ListedDocument>> ListAsync(string collection, string metadata, string version, CancellationToken ct = default)
    {
        var listed = new List<ListedDocument>();
        string? cursor = null;
        do
        {
            var url = $"docs?collection={Uri.EscapeDataString(collection)}&pageSize=1024" + (cursor is null ? "" : "&cursor=" + Uri.EscapeDataString(cursor));
            HttpResponseMessage response;
            try { response = await http.GetAsync(new Uri(_base, url), ct); }
            catch (Exception e) when (e is HttpRequestException || e is TaskCanceledException && !ct.IsCancellationRequested)
            {
                throw new IngestUnavailableException($"ingest at {baseUrl} did not answer: {e.Message}");
            }
            using var _ = response;
            await EnsureAsync(response, ct);
            var page = await response.Content.ReadFromJsonAsync<JsonElement>(WireJson.Web, ct);
            listed.AddRange(page.GetProperty("results").EnumerateArray().Where(d => DocumentMetadata.Holds(d, metadata, version))
                .Select(d => d.GetProperty("@metadata")).Select(m => new ListedDocument(m.GetProperty("@id").GetString()!, m.GetProperty("@etag").GetInt64())));
            cursor = page.GetProperty("nextCursor").GetString();
        }
        while (cursor is not null);
        return listed;
    }

    /// <summary>Ingest's <c>GET /changes/relayed</c>: null when the relay did not publish in time or ingest did not answer.</summary>
    public async Task<IReadOnlyDictionary<string, long>?> EndsAsync(TimeSpan timeout, CancellationToken ct)
    {
        try
        {
            using var response = await http.GetAsync(new Uri(_base, $"changes/relayed?timeoutMs={(int)timeout.TotalMilliseconds}"), ct);
            if (!response.IsSuccessStatusCode) return null;
            var body = await response.Content.ReadFromJsonAsync<JsonElement>(WireJson.Web, ct);
            return body.GetProperty("offsets").EnumerateObject().ToDictionary(p => p.Name, p => p.Value.GetInt64());
        }
        catch (Exception e) when (e is HttpRequestException || e is TaskCanceledException && !ct.IsCancellationRequested) { return null; }
    }

    public async Task<IReadOnlyList<GuardedOutcome>> WriteAsync(IReadOnlyList<GuardedWrite> writes, CancellationToken ct = default)
    {
        var outcomes = new Dictionary<string, GuardedOutcome>();
        var remaining = writes.ToList();
        while (remaining.Count > 0)
        {
            var body = new StringBuilder("[");
            foreach (var w in remaining)
            {
                if (body.Length > 1) body.Append(',');
                body.Append("{\"method\":").Append(w.Json is null ? "\"DELETE\"" : "\"PUT\"").Append(",\"id\":").Append(JsonSerializer.Serialize(w.Id))
                    .Append(",\"etag\":").Append(w.IfMatch);
                if (w.Json is { } json) body.Append(",\"document\":").Append(json);
                body.Append('}');
            }
            body.Append(']');
            using var response = await http.PostAsync(new Uri(_base, "bulk_docs"), new StringContent(body.ToString(), Encoding.UTF8, "application/json"), ct);
            if (response.StatusCode == HttpStatusCode.MultiStatus)
            {
                // A partitioned store applied each partition's part on its own: every command says what became of it.
                var results = (await response.Content.ReadFromJsonAsync<JsonElement>(WireJson.Web, ct)).GetProperty("results").EnumerateArray().ToList();
                var again = new List<GuardedWrite>();
                foreach (var (w, r) in remaining.Zip(results))
                {
                    if (r.TryGetProperty("etag", out var etag) && etag.ValueKind == JsonValueKind.Number) { outcomes[w.Id] = new GuardedOutcome(w.Id, GuardedWriteResult.Written, etag.GetInt64()); continue; }
                    var status = r.GetProperty("status").GetInt32();
                    var reason = r.TryGetProperty("error", out var error) ? Detail(error) : null;
                    if (status == 424) { again.Add(w); continue; }
                    if (status == 503) throw new IngestUnavailableException($"ingest at {baseUrl}: {reason}");
                    outcomes[w.Id] = new GuardedOutcome(w.Id, status switch
                    {
                        409 => GuardedWriteResult.Changed,
                        404 => GuardedWriteResult.Missing,
                        _ => GuardedWriteResult.Refused,
                    }, Reason: reason);
                }
                remaining = again;
                continue;
            }
            if (response.IsSuccessStatusCode)
            {
                var results = (await response.Content.ReadFromJsonAsync<JsonElement>(WireJson.Web, ct)).GetProperty("results").EnumerateArray().ToList();
                foreach (var (w, r) in remaining.Zip(results))
                    outcomes[w.Id] = new GuardedOutcome(w.Id, GuardedWriteResult.Written, r.TryGetProperty("etag", out var e) && e.ValueKind == JsonValueKind.Number ? e.GetInt64() : null);
                break;
            }
            var problem = await response.Content.ReadFromJsonAsync<JsonElement>(WireJson.Web, ct);
            if (!problem.TryGetProperty("index", out var at) || at.ValueKind != JsonValueKind.Number || at.GetInt32() >= remaining.Count)
                throw new IngestUnavailableException($"ingest at {baseUrl} refused a batch: {(int)response.StatusCode} {Detail(problem)}");
            var refused = remaining[at.GetInt32()];
            outcomes[refused.Id] = new GuardedOutcome(refused.Id, (int)response.StatusCode switch
            {
                409 => GuardedWriteResult.Changed,
                404 => GuardedWriteResult.Missing,
                _ => GuardedWriteResult.Refused,
            }, Reason: Detail(problem));
            remaining.RemoveAt(at.GetInt32());
        }
        return writes.Select(w => outcomes[w.Id]).ToList();
    }

    /// <summary>A queue sink's messages, applied by ingest's <c>POST /message_writes</c> (each message all or nothing, at most once per ledger).</summary>
    public async Task<IReadOnlyList<MessageOutcome>> WriteAsync(string ledger, IReadOnlyList<MessageWrites> messages, CancellationToken ct = default)
    {
        var body = new System.Buffers.ArrayBufferWriter<byte>(16 * 1024);
        using (var w = new Utf8JsonWriter(body)) MessageWritesJson.WriteRequest(w, ledger, messages);
        HttpResponseMessage response;
        try
        {
            using var content = new ReadOnlyMemoryContent(body.WrittenMemory);
            content.Headers.ContentType = new("application/json");
            response = await http.PostAsync(new Uri(_base, "message_writes"), content, ct);
        }
        catch (Exception e) when (e is HttpRequestException || e is TaskCanceledException && !ct.IsCancellationRequested)
        {
            throw new IngestUnavailableException($"ingest at {baseUrl} did not answer: {e.Message}");
        }
        using var _ = response;
        await EnsureAsync(response, ct);
        return MessageWritesJson.ReadResults(await response.Content.ReadFromJsonAsync<JsonElement>(WireJson.Web, ct));
    }

    private static string? Detail(JsonElement problem) => problem.ValueKind == JsonValueKind.Object && problem.TryGetProperty("detail", out var d) ? d.GetString() : null;

    private async Task EnsureAsync(HttpResponseMessage response, CancellationToken ct)
    {
        if (response.IsSuccessStatusCode) return;
        throw new IngestUnavailableException($"ingest at {baseUrl} answered {(int)response.StatusCode}: {await response.Content.ReadAsStringAsync(ct)}");
    }
}

/// <summary>The ingest process did not answer, or refused what it should have taken: the caller's work is retried or fails, never a user's error.</summary>
public sealed class IngestUnavailableException(string message) : Exception(message), IStatusException
{
    public int StatusCode => 502;
}
