using System.Text.Json.Serialization;

namespace Magpie.Embeddings.Connections;

/// <summary>
/// An embedding provider Magpie calls instead of the built-in model: an OpenAI-compatible <c>/embeddings</c> endpoint (OpenAI,
/// Azure OpenAI's v1 API, Ollama, vLLM, LM Studio…). <c>{ "type": "openai", "url": "https://api.openai.com/v1", "model":
/// "text-embedding-3-small", "apiKey": "…" }</c>; the rest have defaults. Named, and referred to by name from maps
/// (<c>embedding.text(p.Title, ai.task('name'))</c>) and queries (<c>vector.search(embedding.text(Title, ai.task('name')), $q)</c>).
/// </summary>
public sealed record EmbeddingConnection
{
    public const string OpenAi = "openai";
    public const int MaxBatchSize = 2048, MaxRetriesLimit = 10, MaxTimeoutSeconds = 600;

    public string Type { get; init; } = "";

    /// <summary>The API's base address, the part before <c>/embeddings</c> (<c>https://api.openai.com/v1</c>, <c>http://localhost:11434/v1</c>).</summary>
    public string? Url { get; init; }

    public string? Model { get; init; }

    /// <summary>Sent as <c>Authorization: Bearer …</c>; never shown back (GET answers <c>***</c>). Ollama and local servers take any.</summary>
    public string? ApiKey { get; init; }

    /// <summary>Asked of models that can shorten their vectors (text-embedding-3-*); null: the model's own length.</summary>
    public int? Dimensions { get; init; }

    /// <summary>Texts per request (OpenAI takes up to 2,048).</summary>
    public int BatchSize { get; init; } = 64;

    /// <summary>The per-minute budget of requests to the provider (null: none); requests past it wait their turn.</summary>
    public int? RequestsPerMinute { get; init; }

    /// <summary>How long one request may take before it counts as failed (and is tried again).</summary>
    public int TimeoutSeconds { get; init; } = 30;

    /// <summary>Attempts after the first for a request that failed for a reason that may pass (5xx, 429, timeout, no answer).</summary>
    public int MaxRetries { get; init; } = 3;

    [JsonIgnore] public bool IsOpenAi => string.Equals(Type, OpenAi, StringComparison.OrdinalIgnoreCase);

    /// <summary>What is wrong with the connection as written (not whether the provider answers: that shows when it is used).</summary>
    public IEnumerable<string> Problems()
    {
        if (!IsOpenAi) { yield return $"\"type\" must be \"{OpenAi}\" (an OpenAI-compatible /embeddings endpoint), got '{Type}'"; yield break; }
        if (string.IsNullOrWhiteSpace(Url)) yield return "an openai connection needs \"url\", the API's base address (https://api.openai.com/v1)";
        else if (!Uri.TryCreate(Url, UriKind.Absolute, out var uri) || uri.Scheme is not ("http" or "https") || string.IsNullOrEmpty(uri.Host))
            yield return $"\"url\" must be an http:// or https:// address with a host, got '{Url}'";
        if (string.IsNullOrWhiteSpace(Model)) yield return "an openai connection needs \"model\" (text-embedding-3-small, nomic-embed-text, …)";
        if (Dimensions is < 1 or > 65_536) yield return $"\"dimensions\" must be between 1 and 65536, got {Dimensions}";
        if (BatchSize is < 1 or > MaxBatchSize) yield return $"\"batchSize\" must be between 1 and {MaxBatchSize}, got {BatchSize}";
        if (RequestsPerMinute is < 1) yield return $"\"requestsPerMinute\" must be at least 1 (leave it out for no budget), got {RequestsPerMinute}";
        if (TimeoutSeconds is < 1 or > MaxTimeoutSeconds) yield return $"\"timeoutSeconds\" must be between 1 and {MaxTimeoutSeconds}, got {TimeoutSeconds}";
        if (MaxRetries is < 0 or > MaxRetriesLimit) yield return $"\"maxRetries\" must be between 0 and {MaxRetriesLimit}, got {MaxRetries}";
    }

    /// <summary>The connection as GET shows it: the key is <c>***</c>, and so are the address's password and query values.</summary>
    public EmbeddingConnection Masked() => this with
    {
        ApiKey = ApiKey is null ? null : "***",
        Url = Url is not null && Uri.TryCreate(Url, UriKind.Absolute, out var uri) && (uri.UserInfo.Length > 0 || uri.Query.Length > 0)
            ? new UriBuilder(uri) { UserName = uri.UserInfo.Length > 0 ? uri.UserInfo.Split(':')[0] : "", Password = uri.UserInfo.Contains(':') ? "***" : "", Query = uri.Query.Length > 0 ? "***" : "" }.Uri.ToString()
            : Url,
    };

    /// <summary>A connection name: letters, digits and '_', as the automatic index's field names made from it hold it (<c>Title_embedding_by_name</c>).</summary>
    public static string? NameProblem(string name) =>
        name.Length is 0 or > 64 || !name.All(c => char.IsAsciiLetterOrDigit(c) || c == '_')
            ? $"an embedding connection's name is 1 to 64 letters, digits or '_', got '{name}'"
            : null;
}
