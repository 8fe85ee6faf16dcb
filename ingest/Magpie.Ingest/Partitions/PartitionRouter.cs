using System.Text.Json;
using Magpie.Contracts;
using Magpie.Http;
using Magpie.Kafka;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Partitions;

/// <summary>
/// Any ingest process takes any request: a request about a document goes to the process that owns the document's partition.
/// Here when this process holds it; otherwise forwarded over HTTP to the owner, found by describing the ingest consumer group
/// (each member's client id is its advertised URL), with the caller's own credentials, so the owner applies the same access
/// rules. Forwarded, not produced to the input topic and awaited: a write's answer (its etag, a conflict, a refusal with its
/// reason) is the owner's, one hop away, and reads need the owner's store anyway. While a partition moves (a rebalance, a
/// takeover rebuilding it), requests wait for its new owner up to <see cref="IngestOptions.RoutingTimeout"/>.
/// </summary>
public sealed class PartitionRouter(StorePartitions partitions, IngestOptions options, ILogger<PartitionRouter> log) : IDisposable
{
    /// <summary>Set on a forwarded request: its receiver answers it or refuses it, never forwards it again.</summary>
    public const string ForwardedHeader = "Magpie-Forwarded-By";

    /// <summary>Set on the refusal of a process that does not hold the partition (any more): the sender looks for the owner again.</summary>
    public const string NotOwnerHeader = "Magpie-Not-Owner";

    private static readonly string[] RequestHeaders = ["Authorization", "X-Api-Key", "If-Match", "If-None-Match", "Accept"];
    private static readonly string[] ResponseHeaders = ["ETag", "Location", "Last-Modified", "Retry-After", "WWW-Authenticate"];

    private readonly IndexerGroup _group = new(options.KafkaBootstrapServers!, options.ConsumerGroup, Topics.Documents);
    private readonly HttpClient _http = ForwardingClient(options);
    private (DateTime At, IndexerLayout Layout)? _layout;

    public StorePartitions Partitions => partitions;

    /// <summary>Where the other members reach this process.</summary>
    public string Url => options.AdvertisedUrl;

    /// <summary>
    /// Serves a request about <paramref name="partition"/>: <paramref name="local"/> under a lease when this process holds it,
    /// else the owner's answer.
    /// </summary>
    /// <param name="body">The request's body when the caller has read it already.</param>
    public async Task<object?> ServeAsync(HttpContext ctx, int partition, Func<PartitionLease, Task<object?>> local, string? pathAndQuery = null, byte[]? body = null)
    {
        var deadline = DateTime.UtcNow + options.RoutingTimeout;
        var forwarded = ctx.Request.Headers.ContainsKey(ForwardedHeader);
        var refresh = false;
        while (true)
        {
            var left = deadline - DateTime.UtcNow;
            if (await partitions.EnterAsync(partition, left > TimeSpan.Zero ? left : TimeSpan.Zero, ctx.RequestAborted) is { } lease)
            {
                using (lease) return await local(lease);
            }
            if (forwarded)
            {
                ctx.Response.Headers[NotOwnerHeader] = "true";
                ctx.Response.Headers.RetryAfter = "1";
                return Problems.Of(ErrorKind.Unavailable, $"this ingest process does not hold partition {partition} (any more)");
            }
            var owner = await OwnerOfAsync(partition, refresh);
            if (owner is not null && owner != options.AdvertisedUrl)
            {
                if (body is null)
                {
                    body = await BufferAsync(ctx.Request);
                    // The partition may come here before the owner answers (a takeover): the handler then reads the same body.
                    ctx.Request.Body = new MemoryStream(body, writable: false);
                }
                if (await ForwardAsync(ctx, owner, body, pathAndQuery) is { } answer) return answer;   // null: the owner has moved on
            }
            if (DateTime.UtcNow >= deadline)
            {
                ctx.Response.Headers.RetryAfter = "1";
                return Problems.Of(ErrorKind.Unavailable,
                    $"partition {partition} of the store has no ingest process serving it yet (a takeover or rebalance under way, or no ingest process running); try again");
            }
            refresh = true;
            await Task.Delay(200, ctx.RequestAborted);
        }
    }

    /// <summary>
    /// One partition's part of a request that spans partitions (a bulk's commands, a queue sink's messages): <paramref name="local"/>
    /// under a lease when this process holds the partition, else <paramref name="body"/> sent to the owner at <paramref name="path"/>
    /// as a request of its own (the caller's credentials and query). The answer is read back either way.
    /// </summary>
    public async Task<PartAnswer> ServePartAsync(HttpContext ctx, int partition, string path, byte[] body, Func<HttpContext, PartitionLease, Task<object?>> local)
    {
        var part = new DefaultHttpContext { RequestServices = ctx.RequestServices, RequestAborted = ctx.RequestAborted };
        part.Request.Method = HttpMethods.Post;
        part.Request.Path = path;
        part.Request.QueryString = ctx.Request.QueryString;
        part.Request.ContentType = "application/json";
        foreach (var name in RequestHeaders.Append(ForwardedHeader))
            if (ctx.Request.Headers.TryGetValue(name, out var value)) part.Request.Headers[name] = value;
        part.Response.Body = new MemoryStream();
        var answer = await ServeAsync(part, partition, lease => local(part, lease), body: body);
        if (answer is IResult result) await result.ExecuteAsync(part);
        part.Response.Body.Position = 0;
        using var json = await JsonDocument.ParseAsync(part.Response.Body, cancellationToken: ctx.RequestAborted);
        return new PartAnswer(part.Response.StatusCode, json.RootElement.Clone(), part.Response.Headers);
    }

    /// <summary>The owner of every partition, from the group (cached for a second; <paramref name="refresh"/> asks again).</summary>
    public async Task<IndexerLayout?> LayoutAsync(bool refresh = false)
    {
        if (!refresh && _layout is { } cached && DateTime.UtcNow - cached.At < TimeSpan.FromSeconds(1)) return cached.Layout;
        try
        {
            var layout = await _group.DescribeAsync();
            _layout = (DateTime.UtcNow, layout);
            return layout;
        }
        catch (Confluent.Kafka.KafkaException e)
        {
            log.LogWarning("ingest group not described ({Error})", e.Error.Reason);
            return null;
        }
    }

    /// <summary>The advertised URL of the process holding <paramref name="partition"/>, as the group says now (null: none).</summary>
    public async Task<string?> OwnerOfAsync(int partition, bool refresh = false) =>
        (await LayoutAsync(refresh))?.Members.FirstOrDefault(m => m.Partitions.Contains(partition))?.Url;

    private static async Task<byte[]> BufferAsync(HttpRequest request)
    {
        using var copy = new MemoryStream();
        await request.Body.CopyToAsync(copy, request.HttpContext.RequestAborted);
        return copy.ToArray();
    }

    /// <summary>
    /// What every member of the group answers to a GET of <paramref name="pathAndQuery"/>, asked with the caller's credentials
    /// (its own part of a whole-store answer, such as <c>/stats?local=true</c>); a member that does not answer is left out.
    /// </summary>
    public async Task<IReadOnlyList<(string Url, JsonElement Answer)>> AskMembersAsync(HttpContext ctx, string pathAndQuery)
    {
        var members = (await LayoutAsync())?.Members.Where(m => m.Url != options.AdvertisedUrl).Select(m => m.Url).ToList() ?? [];
        var answers = await Task.WhenAll(members.Select(async url => await AskAsync(ctx, url, pathAndQuery) is { } answer ? (url, answer) : ((string, JsonElement)?)null));
        return [.. answers.Where(a => a is not null).Select(a => a!.Value)];
    }

    /// <summary>A member's JSON answer to a GET of <paramref name="pathAndQuery"/> with the caller's credentials; null unless 2xx.</summary>
    public async Task<JsonElement?> AskAsync(HttpContext ctx, string url, string pathAndQuery)
    {
        using var request = CallerRequest(ctx, HttpMethod.Get, url, pathAndQuery);
        try
        {
            using var response = await _http.SendAsync(request, ctx.RequestAborted);
            if (!response.IsSuccessStatusCode) return null;
            using var json = JsonDocument.Parse(await response.Content.ReadAsByteArrayAsync(ctx.RequestAborted));
            return json.RootElement.Clone();
        }
        catch (HttpRequestException) { return null; }
    }

    /// <summary>The owner's answer to the request, or null when the owner says it does not hold the partition.</summary>
    public async Task<IResult?> ForwardAsync(HttpContext ctx, string owner, byte[] body, string? pathAndQuery = null)
    {
        using var request = CallerRequest(ctx, new HttpMethod(ctx.Request.Method), owner, pathAndQuery ?? ctx.Request.Path + ctx.Request.QueryString);
        if (body.Length > 0 || HttpMethods.IsPut(ctx.Request.Method) || HttpMethods.IsPost(ctx.Request.Method) || HttpMethods.IsPatch(ctx.Request.Method))
        {
            request.Content = new ByteArrayContent(body);
            if (ctx.Request.ContentType is { } type) request.Content.Headers.TryAddWithoutValidation("Content-Type", type);
        }
        HttpResponseMessage response;
        try { response = await _http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, ctx.RequestAborted); }
        catch (HttpRequestException e)
        {
            log.LogInformation("forwarding to {Owner} failed ({Error}); looking for the owner again", owner, e.Message);
            return null;
        }
        if ((int)response.StatusCode == StatusCodes.Status503ServiceUnavailable && response.Headers.Contains(NotOwnerHeader))
        {
            response.Dispose();
            return null;
        }
        return new ForwardedAnswer(response);
    }

    /// <summary>A request to another member carrying the caller's credentials and conditions, marked as forwarded by this process.</summary>
    private HttpRequestMessage CallerRequest(HttpContext ctx, HttpMethod method, string url, string pathAndQuery)
    {
        var request = new HttpRequestMessage(method, new Uri(new Uri(url), pathAndQuery));
        foreach (var name in RequestHeaders)
            if (ctx.Request.Headers.TryGetValue(name, out var value)) request.Headers.TryAddWithoutValidation(name, value.ToArray());
        request.Headers.TryAddWithoutValidation(ForwardedHeader, options.AdvertisedUrl);
        return request;
    }

    /// <summary>A client without the service key: a forwarded request carries only its caller's credentials.</summary>
    private static HttpClient ForwardingClient(IngestOptions options)
    {
        var client = options.PeerClient(TimeSpan.FromMinutes(5));
        client.DefaultRequestHeaders.Authorization = null;
        return client;
    }

    public void Dispose()
    {
        _group.Dispose();
        _http.Dispose();
    }

    /// <summary>One partition's answer to its part of a request: status, JSON body, headers.</summary>
    public sealed record PartAnswer(int Status, JsonElement Body, IHeaderDictionary Headers);

    /// <summary>The owner's answer, passed on as it came: status, the headers a client reads, the body.</summary>
    private sealed class ForwardedAnswer(HttpResponseMessage response) : IResult
    {
        public async Task ExecuteAsync(HttpContext ctx)
        {
            using (response)
            {
                ctx.Response.StatusCode = (int)response.StatusCode;
                foreach (var name in ResponseHeaders)
                    if (response.Headers.TryGetValues(name, out var values) || response.Content.Headers.TryGetValues(name, out values))
                        ctx.Response.Headers[name] = values.ToArray();
                foreach (var (name, values) in response.Headers)
                    if (name.StartsWith("Magpie-", StringComparison.OrdinalIgnoreCase)) ctx.Response.Headers[name] = values.ToArray();
                if (response.Content.Headers.ContentType is { } type) ctx.Response.ContentType = type.ToString();
                await response.Content.CopyToAsync(ctx.Response.Body, ctx.RequestAborted);
            }
        }
    }
}
