using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Contracts;

namespace Magpie.Producers.Subscriptions;

/// <summary>How a worker opens a subscription another worker holds (RavenDB's strategies).</summary>
public enum SubscriptionOpeningStrategy
{
    /// <summary>The default: if another worker holds it, <see cref="SubscriptionWorker.RunAsync"/> ends with <see cref="SubscriptionInUseException"/>.</summary>
    OpenIfFree,
    /// <summary>This worker takes it; the other one's next request or ack fails and it ends.</summary>
    TakeOver,
    /// <summary>Waits (retrying) until the holder lets go or its lease runs out.</summary>
    WaitForFree,
}

public sealed record SubscriptionWorkerOptions(string Subscription)
{
    /// <summary>This worker's name; the server knows who holds the subscription by it.</summary>
    public string WorkerName { get; init; } = $"{Environment.MachineName}-{Guid.NewGuid().ToString("N")[..8]}";
    public SubscriptionOpeningStrategy Strategy { get; init; } = SubscriptionOpeningStrategy.OpenIfFree;
    public int MaxDocsPerBatch { get; init; } = 100;

    /// <summary>How long one request waits on the server for matching changes (long-poll) before asking again.</summary>
    public TimeSpan WaitForDocuments { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>Server unreachable or failing (5xx): the first wait before retrying, doubled each time up to <see cref="MaxRetryDelay"/>.</summary>
    public TimeSpan RetryDelay { get; init; } = TimeSpan.FromSeconds(1);
    public TimeSpan MaxRetryDelay { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// How often the batch handler may fail on the same batch (it is delivered again each time) before
    /// <see cref="SubscriptionWorker.RunAsync"/> gives up with <see cref="SubscriptionHandlerException"/>.
    /// </summary>
    public int MaxHandlerAttempts { get; init; } = 3;

    /// <summary>The API key sent with every request (<c>Authorization: Bearer</c>) when the server has keys; a read key is enough.</summary>
    public string? ApiKey { get; init; }
}

/// <summary>One delivered change: the document (as the subscription's query selects it), or a delete (when the subscription includes them).</summary>
public sealed record SubscriptionItem(string Id, long Etag, JsonElement? Document, bool Deleted);

public sealed record SubscriptionBatch(long Id, IReadOnlyList<SubscriptionItem> Items);

public class SubscriptionException(string message, Exception? inner = null) : Exception(message, inner);

/// <summary>Another worker holds the subscription (OpenIfFree), or took it over while this one worked.</summary>
public sealed class SubscriptionInUseException(string message) : SubscriptionException(message);

public sealed class SubscriptionDoesNotExistException(string message) : SubscriptionException(message);

/// <summary>The batch handler failed <see cref="SubscriptionWorkerOptions.MaxHandlerAttempts"/> times on one batch (the inner exception is the last).</summary>
public sealed class SubscriptionHandlerException(string message, Exception inner) : SubscriptionException(message, inner);

/// <summary>
/// The client side of a Magpie data subscription (long-poll protocol, see the server's <c>SubscriptionEndpoints</c>):
/// asks for a batch, hands it to the handler, acknowledges it, asks for the next, until cancelled or the
/// subscription can't be had. While the handler runs, a heartbeat keeps the lease, so a slow handler never loses
/// the subscription; a worker that dies stops the heartbeat and the server gives its unacknowledged batch to the
/// next worker. Transport failures and 5xx answers are retried with back-off; the same batch comes again after a
/// retry, so handlers must tolerate seeing a batch twice (at-least-once).
/// </summary>
public sealed class SubscriptionWorker(HttpClient http, SubscriptionWorkerOptions options)
{
    private static readonly JsonSerializerOptions Json = WireJson.Web;
    private readonly string _path = $"subscriptions/{Uri.EscapeDataString(options.Subscription)}";

    public SubscriptionWorkerOptions Options => options;

    /// <summary>Called with each failure that is retried (server unreachable, 5xx, a handler attempt that threw).</summary>
    public event Action<Exception>? OnRetry;

    /// <summary>Batches processed and acknowledged so far.</summary>
    public long Processed { get; private set; }

    public async Task RunAsync(Func<SubscriptionBatch, CancellationToken, Task> handle, CancellationToken ct = default)
    {
        var lease = await RetryingAsync(LeaseAsync, ct);
        var failures = 0;
        while (!ct.IsCancellationRequested)
        {
            var batch = await RetryingAsync(NextAsync, ct);
            if (batch is null) continue;
            try
            {
                using var heartbeat = CancellationTokenSource.CreateLinkedTokenSource(ct);
                var beating = HeartbeatAsync(lease / 3, heartbeat.Token);
                try { await handle(batch, ct); }
                finally
                {
                    await heartbeat.CancelAsync();
                    await beating;
                }
            }
            catch (Exception e) when (e is not OperationCanceledException || !ct.IsCancellationRequested)
            {
                if (e is SubscriptionInUseException) throw;
                if (++failures >= options.MaxHandlerAttempts)
                    throw new SubscriptionHandlerException($"the handler failed {failures} times on batch {batch.Id} of '{options.Subscription}'", e);
                OnRetry?.Invoke(e);
                await Task.Delay(options.RetryDelay, ct);
                continue;   // not acknowledged: the server hands out the same batch again
            }
            failures = 0;
            // Not taken (410): the server restarted or the lease ran out meanwhile; the same documents come again.
            if (await RetryingAsync(c => AckAsync(batch.Id, c), ct)) Processed++;
        }
        ct.ThrowIfCancellationRequested();
    }

    private async Task<TimeSpan> LeaseAsync(CancellationToken ct)
    {
        using var r = await SendAsync(HttpMethod.Get, _path, null, ct);
        await ThrowIfFailedAsync(r, ct);
        var body = await r.Content.ReadFromJsonAsync<JsonElement>(Json, ct);
        return TimeSpan.FromSeconds(body.GetProperty("definition").GetProperty("leaseSeconds").GetInt32());
    }

    private async Task<SubscriptionBatch?> NextAsync(CancellationToken ct)
    {
        var url = $"{_path}/next?worker={Uri.EscapeDataString(options.WorkerName)}&strategy={options.Strategy}" +
                  $"&maxDocs={options.MaxDocsPerBatch}&waitMs={(int)options.WaitForDocuments.TotalMilliseconds}";
        using var r = await SendAsync(HttpMethod.Get, url, null, ct);
        if (r.StatusCode == HttpStatusCode.NoContent) return null;
        // WaitForFree: the server waited as long as the request allowed; ask again (after the usual back-off).
        if (r.StatusCode == HttpStatusCode.Conflict && options.Strategy == SubscriptionOpeningStrategy.WaitForFree)
            throw new HttpRequestException("the subscription is still held by another worker", null, HttpStatusCode.ServiceUnavailable);
        await ThrowIfFailedAsync(r, ct);
        var body = await r.Content.ReadFromJsonAsync<JsonElement>(Json, ct);
        var items = body.GetProperty("items").EnumerateArray().Select(i => new SubscriptionItem(
            i.GetProperty("id").GetString()!, i.GetProperty("etag").GetInt64(),
            i.TryGetProperty("document", out var d) ? d.Clone() : null,
            i.TryGetProperty("deleted", out var del) && del.GetBoolean())).ToList();
        return new SubscriptionBatch(body.GetProperty("batchId").GetInt64(), items);
    }

    private async Task<bool> AckAsync(long batchId, CancellationToken ct)
    {
        using var r = await SendAsync(HttpMethod.Post, $"{_path}/ack", new { worker = options.WorkerName, batchId }, ct);
        if (r.StatusCode == HttpStatusCode.Gone) return false;
        await ThrowIfFailedAsync(r, ct);
        return true;
    }

    private async Task HeartbeatAsync(TimeSpan every, CancellationToken ct)
    {
        try
        {
            while (true)
            {
                await Task.Delay(every, ct);
                // A missed heartbeat is retried at the next one; a lost subscription shows at the ack.
                try { (await SendAsync(HttpMethod.Post, $"{_path}/heartbeat", new { worker = options.WorkerName }, ct)).Dispose(); }
                catch (HttpRequestException e) { OnRetry?.Invoke(e); }
            }
        }
        catch (OperationCanceledException) { }
    }

    private Task<HttpResponseMessage> SendAsync(HttpMethod method, string url, object? body, CancellationToken ct)
    {
        var request = new HttpRequestMessage(method, url) { Content = body is null ? null : JsonContent.Create(body, options: Json) };
        if (options.ApiKey is { } key) request.Headers.Authorization = new("Bearer", key);
        return http.SendAsync(request, ct);
    }

    /// <summary>Runs <paramref name="call"/> until it succeeds: unreachable server, timeouts and 5xx back off and retry; 4xx end the run.</summary>
    private Task<T> RetryingAsync<T>(Func<CancellationToken, Task<T>> call, CancellationToken ct) =>
        SupervisedLoop.CallAsync(call, new Backoff(options.RetryDelay, options.MaxRetryDelay),
            e => e is HttpRequestException { StatusCode: null or >= HttpStatusCode.InternalServerError } || e is TaskCanceledException,
            OnRetry, ct);

    private async Task ThrowIfFailedAsync(HttpResponseMessage r, CancellationToken ct)
    {
        if (r.IsSuccessStatusCode) return;
        var detail = await r.Content.ReadAsStringAsync(ct);
        try { detail = JsonDocument.Parse(detail).RootElement.GetProperty("detail").GetString() ?? detail; }
        catch (Exception e) when (e is JsonException or KeyNotFoundException or InvalidOperationException) { }
        throw r.StatusCode switch
        {
            HttpStatusCode.NotFound => new SubscriptionDoesNotExistException(detail),
            HttpStatusCode.Conflict => new SubscriptionInUseException(detail),
            >= HttpStatusCode.InternalServerError => new HttpRequestException(detail, null, r.StatusCode),
            _ => new SubscriptionException($"{(int)r.StatusCode}: {detail}"),
        };
    }
}
