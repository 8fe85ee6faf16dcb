using System.Collections.Concurrent;
using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Embeddings;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Logging;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A local OpenAI-compatible embeddings endpoint (<c>POST /v1/embeddings</c>, OpenAI's request and answer, float or base64
/// encoding) answering with the built-in model, so a connection's vectors can be checked against the model run in the test. It can
/// be told to fail: answer 500 for a while, answer slowly, refuse (400) any text holding <see cref="RefusedMarker"/>.
/// </summary>
public sealed class OpenAiCompatibleServer : IAsyncDisposable
{
    public const string RefusedMarker = "REFUSE-ME";

    private readonly WebApplication _app;
    private readonly ConcurrentQueue<(DateTime At, int Texts)> _requests = new();
    private readonly ConcurrentQueue<string> _texts = new();

    private OpenAiCompatibleServer(WebApplication app, Uri url) => (_app, Url) = (app, url);

    /// <summary>The API's base address, as a connection's <c>url</c> takes it.</summary>
    public Uri Url { get; }

    /// <summary>Requests answered or failed so far, with how many texts each carried.</summary>
    public IReadOnlyList<(DateTime At, int Texts)> Requests => [.. _requests];

    /// <summary>Every text asked for so far, in the order asked.</summary>
    public IReadOnlyList<string> Texts => [.. _texts];

    /// <summary>Requests answered 500 until this time.</summary>
    public DateTime FailUntil { get; set; }

    /// <summary>The next this many requests are answered 500.</summary>
    public int FailNext;

    /// <summary>How long each request waits before it is answered.</summary>
    public TimeSpan Delay { get; set; }

    public static async Task<OpenAiCompatibleServer> StartAsync()
    {
        var port = FreePort.Next();
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls($"http://127.0.0.1:{port}");
        builder.Logging.ClearProviders();
        var app = builder.Build();
        var server = new OpenAiCompatibleServer(app, new Uri($"http://127.0.0.1:{port}/v1"));
        app.MapPost("/v1/embeddings", server.EmbedAsync);
        await app.StartAsync();
        return server;
    }

    private async Task<IResult> EmbedAsync(HttpRequest request)
    {
        var body = await JsonNode.ParseAsync(request.Body) ?? throw new InvalidOperationException("no body");
        var input = body["input"] is JsonArray array ? array.Select(t => t!.GetValue<string>()).ToList() : [body["input"]!.GetValue<string>()];
        _requests.Enqueue((DateTime.UtcNow, input.Count));
        foreach (var text in input) _texts.Enqueue(text);
        if (Delay > TimeSpan.Zero) await Task.Delay(Delay);
        if (DateTime.UtcNow < FailUntil || Interlocked.Decrement(ref FailNext) >= 0)
            return Results.Json(new { error = new { message = "the test server is down", type = "server_error" } }, statusCode: 500);
        if (input.FirstOrDefault(t => t.Contains(RefusedMarker, StringComparison.Ordinal)) is { } refused)
            return Results.Json(new { error = new { message = $"this text is refused: {refused[..Math.Min(40, refused.Length)]}", type = "invalid_request_error" } }, statusCode: 400);
        var vectors = await BuiltInModel.Shared.EmbedAsync(input, CancellationToken.None);
        var base64 = body["encoding_format"]?.GetValue<string>() == "base64";
        return Results.Json(new
        {
            @object = "list",
            model = body["model"]?.GetValue<string>(),
            data = vectors.Select((v, i) => new
            {
                @object = "embedding", index = i,
                embedding = base64 ? (object)Convert.ToBase64String(System.Runtime.InteropServices.MemoryMarshal.AsBytes(v.AsSpan())) : v,
            }),
            usage = new { prompt_tokens = input.Sum(t => t.Length / 4), total_tokens = input.Sum(t => t.Length / 4) },
        });
    }

    public async ValueTask DisposeAsync() => await _app.DisposeAsync();
}
