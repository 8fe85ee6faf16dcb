using System.Buffers;
using System.Net;
using System.Text.Json;
using Magpie.Contracts;

namespace Magpie.Producers.Sinks;

/// <summary>
/// Sends batches to <c>POST /bulk_docs</c> (all-or-nothing per batch). A 503 is load shedding:
/// wait for Retry-After and send the same batch again; any other error stops the import with the
/// server's problem detail. <paramref name="apiKey"/>: sent as <c>Authorization: Bearer</c> (a write key) when the server has keys.
/// </summary>
public sealed class HttpBulkSink(Uri baseUrl, HttpClient? client = null, string? apiKey = null) : IDocumentSink
{
    private readonly HttpClient _http = client ?? new HttpClient { BaseAddress = baseUrl, Timeout = TimeSpan.FromMinutes(2) };

    public async Task SendAsync(IReadOnlyList<DocumentWrite> batch, CancellationToken ct)
    {
        var body = Serialize(batch);
        var backoff = new Backoff(TimeSpan.FromMilliseconds(200), TimeSpan.FromSeconds(10));
        for (var attempt = 1; ; attempt++)
        {
            using var content = new ByteArrayContent(body);
            content.Headers.ContentType = new("application/json");
            using var request = new HttpRequestMessage(HttpMethod.Post, new Uri(baseUrl, "bulk_docs")) { Content = content };
            if (apiKey is not null) request.Headers.Authorization = new("Bearer", apiKey);
            using var response = await _http.SendAsync(request, ct);
            if (response.IsSuccessStatusCode) return;
            if (response.StatusCode == HttpStatusCode.ServiceUnavailable && attempt < 20)
            {
                var delay = backoff.Next();
                await Task.Delay(response.Headers.RetryAfter?.Delta ?? delay, ct);
                continue;
            }
            var detail = await response.Content.ReadAsStringAsync(ct);
            throw new HttpRequestException($"POST /bulk_docs failed with {(int)response.StatusCode}: {detail}");
        }
    }

    public static byte[] Serialize(IReadOnlyList<DocumentWrite> batch)
    {
        var buffer = new ArrayBufferWriter<byte>(batch.Count * 1024);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartArray();
            foreach (var write in batch)
            {
                w.WriteStartObject();
                w.WriteString("method", write.Kind.ToString().ToUpperInvariant());
                w.WriteString("id", write.Id);
                if (write.Kind == WriteKind.Put) { w.WritePropertyName("document"); w.WriteRawValue(write.Body!, skipInputValidation: true); }
                if (write.Kind == WriteKind.Patch) { w.WritePropertyName("patch"); w.WriteRawValue(write.Body!, skipInputValidation: true); }
                w.WriteEndObject();
            }
            w.WriteEndArray();
        }
        return buffer.WrittenSpan.ToArray();
    }

    public ValueTask DisposeAsync()
    {
        _http.Dispose();
        return ValueTask.CompletedTask;
    }
}
