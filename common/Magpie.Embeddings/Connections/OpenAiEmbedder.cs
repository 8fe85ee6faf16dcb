using System.ClientModel;
using System.ClientModel.Primitives;
using Magpie.Contracts;
using Microsoft.Extensions.AI;
using OpenAI;

namespace Magpie.Embeddings.Connections;

/// <summary>
/// An OpenAI-compatible provider behind <see cref="IEmbeddingGenerator{TInput,TEmbedding}"/> (Microsoft.Extensions.AI over the
/// OpenAI client): texts go in requests of the connection's batch size, within its per-minute budget; a request that fails for a
/// reason that may pass is tried again after the one back-off every loop uses, up to the connection's retries, then the whole call
/// fails with <see cref="EmbeddingUnavailableException"/>; a refusal fails with <see cref="EmbeddingRefusedException"/> at once.
/// </summary>
public sealed class OpenAiEmbedder : ITextEmbedder, IDisposable
{
    private readonly EmbeddingConnection _connection;
    private readonly IEmbeddingGenerator<string, Embedding<float>> _generator;
    private readonly RequestPacer? _budget;
    private readonly RetryDelays _delays;

    public OpenAiEmbedder(string name, EmbeddingConnection connection, RetryDelays? delays = null)
    {
        _connection = connection;
        _delays = delays ?? RetryDelays.Default;
        Model = $"{name} ({connection.Model})";
        var client = new OpenAIClient(new ApiKeyCredential(string.IsNullOrEmpty(connection.ApiKey) ? "none" : connection.ApiKey), new OpenAIClientOptions
        {
            Endpoint = new Uri(connection.Url!),
            NetworkTimeout = TimeSpan.FromSeconds(connection.TimeoutSeconds),
            RetryPolicy = new ClientRetryPolicy(0),   // retried here, with the back-off and the budget
        });
        _generator = client.GetEmbeddingClient(connection.Model!).AsIEmbeddingGenerator(connection.Dimensions);
        // The budget spread evenly (one request every minute / budget, no burst): no minute ever holds more than the budget.
        if (connection.RequestsPerMinute is { } perMinute) _budget = new RequestPacer(perMinute);
    }

    public string Model { get; }

    public async Task<float[][]> EmbedAsync(IReadOnlyList<string> texts, CancellationToken ct, bool query = false)
    {
        var vectors = new float[texts.Count][];
        for (var start = 0; start < texts.Count; start += _connection.BatchSize)
        {
            var batch = texts.Skip(start).Take(_connection.BatchSize).Select(t => EmbeddingText.Of(t) ?? " ").ToList();
            var made = await RequestAsync(batch, ct);
            for (var i = 0; i < made.Length; i++) vectors[start + i] = made[i];
        }
        return vectors;
    }

    private async Task<float[][]> RequestAsync(List<string> batch, CancellationToken ct)
    {
        var backoff = _delays.Start();
        for (var attempt = 0; ; attempt++)
        {
            if (_budget is not null) await _budget.WaitTurnAsync(ct);
            string failure;
            try
            {
                var answer = await _generator.GenerateAsync(batch, cancellationToken: ct);
                if (answer.Count != batch.Count)
                    throw new EmbeddingRefusedException($"embedding connection {Model} answered {answer.Count} vectors for {batch.Count} texts");
                return [.. answer.Select(e => e.Vector.ToArray())];
            }
            catch (ClientResultException e) when (e.Status is >= 400 and < 500 and not (408 or 429))
            {
                throw new EmbeddingRefusedException($"embedding connection {Model} refused the texts: {e.Status} {Reason(e)}", e);
            }
            catch (ClientResultException e) { failure = e.Status == 0 ? Reason(e) : $"{e.Status} {Reason(e)}"; }
            catch (HttpRequestException e) { failure = e.Message; }
            catch (OperationCanceledException e) when (!ct.IsCancellationRequested) { failure = $"no answer in {_connection.TimeoutSeconds} s ({e.Message})"; }
            if (attempt >= _connection.MaxRetries)
                throw new EmbeddingUnavailableException($"embedding connection {Model} failed {attempt + 1} times; last: {failure}");
            await Task.Delay(backoff.Next(), ct);
        }
    }

    /// <summary>The provider's own words (OpenAI's <c>{ "error": { "message" } }</c>), else the client's first line.</summary>
    private static string Reason(ClientResultException e)
    {
        try
        {
            if (e.GetRawResponse()?.Content is { } content && System.Text.Json.JsonDocument.Parse(content.ToMemory()).RootElement is
                { ValueKind: System.Text.Json.JsonValueKind.Object } body && body.TryGetProperty("error", out var error))
                return error.ValueKind == System.Text.Json.JsonValueKind.Object && error.TryGetProperty("message", out var m) ? m.ToString() : error.ToString();
        }
        catch (System.Text.Json.JsonException) { }
        return e.Message.Split('\n')[0].Trim();
    }

    public void Dispose()
    {
        _generator.Dispose();
    }
}
