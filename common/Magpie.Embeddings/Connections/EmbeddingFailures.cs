namespace Magpie.Embeddings.Connections;

/// <summary>
/// The provider could not answer now (a 5xx, 429, a timeout, no connection) even after its retries: nothing is wrong with the
/// texts, so an index waits and tries its batch again (its status says why), and a query answers 503.
/// </summary>
public sealed class EmbeddingUnavailableException(string message, Exception? inner = null) : Exception(message, inner);

/// <summary>
/// The provider refused the texts (a 4xx other than 408/429: too long, a bad model name, a refused key) or there is no such
/// connection: asking again the same way cannot help. Each document that asked fails with the reason (retried by
/// <c>POST /indexes/{name}/errors/retry</c>), and a query answers 400.
/// </summary>
public sealed class EmbeddingRefusedException(string message, Exception? inner = null) : Exception(message, inner);
