using System.Diagnostics;
using System.Numerics.Tensors;
using Magpie.Contracts;
using Magpie.Embeddings;
using Magpie.Embeddings.Connections;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Embeddings;

/// <summary>
/// An OpenAI-compatible connection against a local server answering OpenAI's protocol with the built-in model: the vectors are the
/// model's, texts go in batches, a provider failing for a while is waited out, one failing for good, slowly or by refusing fails as it
/// should, and the per-minute budget holds.
/// </summary>
public sealed class EmbeddingConnectionTests : IAsyncLifetime
{
    private OpenAiCompatibleServer _server = null!;
    private static readonly RetryDelays Quick = new(TimeSpan.FromMilliseconds(20), TimeSpan.FromMilliseconds(100));

    public async Task InitializeAsync() => _server = await OpenAiCompatibleServer.StartAsync();

    public async Task DisposeAsync() => await _server.DisposeAsync();

    private OpenAiEmbedder Connect(int batchSize = 64, int maxRetries = 3, int timeoutSeconds = 30, int? perMinute = null) =>
        new("local", new EmbeddingConnection
        {
            Type = "openai", Url = _server.Url.ToString(), Model = "all-minilm", ApiKey = "test-key",
            BatchSize = batchSize, MaxRetries = maxRetries, TimeoutSeconds = timeoutSeconds, RequestsPerMinute = perMinute,
        }, Quick);

    private static readonly string[] Texts =
    [
        "How do I tag a question about elections?", "Flag disputes on old answers", "Is it on topic to ask about the cold war?",
        "Citations in answers", "The meta site's FAQ", "Why was my post closed?", "Book recommendations as questions",
    ];

    [Fact]
    public async Task Its_vectors_are_the_models_and_its_texts_go_in_batches_of_the_connections_size()
    {
        using var connection = Connect(batchSize: 3);
        var made = await connection.EmbedAsync(Texts, CancellationToken.None);
        var model = await BuiltInModel.Shared.EmbedAsync(Texts, CancellationToken.None);
        for (var i = 0; i < Texts.Length; i++)
            Assert.True(TensorPrimitives.CosineSimilarity(made[i], model[i]) >= 0.9999f, $"text {i}: {TensorPrimitives.CosineSimilarity(made[i], model[i])}");
        Assert.Equal([3, 3, 1], _server.Requests.Select(r => r.Texts));
    }

    [Fact]
    public async Task A_provider_failing_for_a_while_is_asked_again_after_the_back_off()
    {
        using var connection = Connect(maxRetries: 3);
        _server.FailNext = 2;
        var made = await connection.EmbedAsync(Texts[..2], CancellationToken.None);
        Assert.Equal(2, made.Length);
        Assert.Equal(3, _server.Requests.Count);
    }

    [Fact]
    public async Task A_provider_still_failing_after_the_retries_is_unavailable_and_says_why()
    {
        using var connection = Connect(maxRetries: 2);
        _server.FailNext = 100;
        var e = await Assert.ThrowsAsync<EmbeddingUnavailableException>(() => connection.EmbedAsync(Texts[..2], CancellationToken.None));
        Assert.Contains("500", e.Message);
        Assert.Contains("failed 3 times", e.Message);
        Assert.Equal(3, _server.Requests.Count);
    }

    [Fact]
    public async Task A_refused_text_fails_at_once_with_the_providers_reason()
    {
        using var connection = Connect(maxRetries: 3);
        var e = await Assert.ThrowsAsync<EmbeddingRefusedException>(() => connection.EmbedAsync(["fine", $"not {OpenAiCompatibleServer.RefusedMarker}"], CancellationToken.None));
        Assert.Contains("400", e.Message);
        Assert.Contains("this text is refused", e.Message);
        Assert.Single(_server.Requests);
    }

    [Fact]
    public async Task A_provider_slower_than_the_timeout_is_unavailable_without_waiting_for_it()
    {
        using var connection = Connect(maxRetries: 1, timeoutSeconds: 1);
        _server.Delay = TimeSpan.FromSeconds(10);
        var clock = Stopwatch.StartNew();
        var e = await Assert.ThrowsAsync<EmbeddingUnavailableException>(() => connection.EmbedAsync(["slow"], CancellationToken.None));
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(8), $"gave up after {clock.Elapsed.TotalSeconds:N1} s");
        Assert.Contains("failed 2 times", e.Message);
    }

    [Fact]
    public async Task The_per_minute_budget_spreads_requests_evenly()
    {
        // 120 requests a minute: one every 500 ms, never more.
        using var connection = Connect(batchSize: 1, perMinute: 120);
        await connection.EmbedAsync(Texts[..5], CancellationToken.None);
        var at = _server.Requests.Select(r => r.At).Order().ToList();
        Assert.Equal(5, at.Count);
        // Arrival times at the server: a request slowed on its way (the test process is busy embedding) shortens the gap after it,
        // never the whole span.
        Assert.True(at[^1] - at[0] >= TimeSpan.FromMilliseconds(4 * 500 - 200), $"5 requests within {(at[^1] - at[0]).TotalMilliseconds:N0} ms");

        // The turns themselves, as requests leave: six callers at once go one interval (100 ms at 600 a minute) after another — the
        // n-th never before n intervals (a busy machine only makes a turn later).
        var pacer = new RequestPacer(600);
        var clock = Stopwatch.StartNew();
        var turns = (await Task.WhenAll(Enumerable.Range(0, 6).Select(async _ => { await pacer.WaitTurnAsync(CancellationToken.None); return clock.Elapsed; }))).Order().ToList();
        for (var i = 0; i < turns.Count; i++)
            Assert.True(turns[i] >= TimeSpan.FromMilliseconds(100 * i - 2), $"turn {i} came at {turns[i].TotalMilliseconds:N0} ms");
    }

    [Fact]
    public void A_connection_says_what_is_wrong_with_it_and_shows_no_key()
    {
        var problems = new EmbeddingConnection { Type = "openai", Url = "ftp://x", BatchSize = 0, MaxRetries = 99 }.Problems().ToList();
        Assert.Contains(problems, p => p.Contains("\"url\""));
        Assert.Contains(problems, p => p.Contains("\"model\""));
        Assert.Contains(problems, p => p.Contains("\"batchSize\""));
        Assert.Contains(problems, p => p.Contains("\"maxRetries\""));
        Assert.Contains("\"type\"", new EmbeddingConnection { Type = "cohere" }.Problems().Single());
        var masked = new EmbeddingConnection { Type = "openai", Url = "https://u:secret@host/v1?key=abc", Model = "m", ApiKey = "sk-1" }.Masked();
        Assert.Equal("***", masked.ApiKey);
        Assert.DoesNotContain("secret", masked.Url);
        Assert.DoesNotContain("abc", masked.Url);
        Assert.NotNull(EmbeddingConnection.NameProblem("has space"));
        Assert.Null(EmbeddingConnection.NameProblem("openai_small"));
    }
}
