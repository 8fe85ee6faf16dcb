
namespace Magpie.EtlSinks.Configuration;

/// <summary>
/// A queue sink (<c>PUT /sinks/{name}</c>): <c>{ "connection", "queues": […] | "topics": […], "script", "deadLetter"?, "batchSize"?,
/// "disabled"? }</c>. It consumes RabbitMQ queues (declared durable when missing) or Kafka topics (consumer group
/// <c>magpie-sink-{name}</c>, from the earliest offset the first time) and writes what its script makes of each message.
/// </summary>
public sealed record QueueSinkDefinition : IRunnableEntry
{
    public const int MaxBatchSize = 4_096;

    public string Connection { get; init; } = "";
    public List<string>? Queues { get; init; }
    public List<string>? Topics { get; init; }
    public string Script { get; init; } = "";

    /// <summary>Where messages that fail go: a queue (RabbitMQ, declared durable) or topic (Kafka). Default <c>{name}.dead-letters</c>.</summary>
    public string? DeadLetter { get; init; }

    /// <summary>Messages written to the store per commit (and the prefetch window is twice this).</summary>
    public int BatchSize { get; init; } = 512;

    public bool Disabled { get; init; }

    public EtlReconnect Reconnect { get; init; } = new();

    public string DeadLetterOf(string sink) => string.IsNullOrWhiteSpace(DeadLetter) ? $"{sink}.dead-letters" : DeadLetter;

    /// <summary>Where the messages come from, as the stats and the script's <c>message</c> name them.</summary>
    public IReadOnlyList<string> Sources => (IReadOnlyList<string>?)Queues ?? Topics ?? [];

    public IEnumerable<string> Problems(string name, EtlConnection? connection)
    {
        if (string.IsNullOrWhiteSpace(Connection)) yield return "\"connection\" names the connection to consume from (PUT /etl/connections/{name})";
        else if (connection is null) yield return $"connection '{Connection}' does not exist (PUT /etl/connections/{Connection} first)";
        if (string.IsNullOrWhiteSpace(Script)) yield return "\"script\" turns each message into writes: put(id, doc), del(id), patch(id, ops)";
        if (connection is { IsRabbitMq: true })
        {
            if (Topics is not null) yield return "a rabbitmq connection consumes \"queues\", not \"topics\"";
            if (Queues is not { Count: > 0 }) yield return "\"queues\" needs at least one queue name";
        }
        if (connection is { IsKafka: true })
        {
            if (Queues is not null) yield return "a kafka connection consumes \"topics\", not \"queues\"";
            if (Topics is not { Count: > 0 }) yield return "\"topics\" needs at least one topic name";
            if (Topics?.Any(t => t.StartsWith("magpie.", StringComparison.Ordinal)) == true)
                yield return "Magpie's own topics (magpie.*) are not a sink's input: magpie.documents is already consumed by ingest";
        }
        if (Sources.Any(string.IsNullOrWhiteSpace)) yield return "queue and topic names must not be empty";
        if (Sources.Contains(DeadLetterOf(name)))
            yield return "\"deadLetter\" must not be one of the sink's own inputs";
        if (BatchSize is < 1 or > MaxBatchSize) yield return $"\"batchSize\" must be between 1 and {MaxBatchSize}";
        if (Reconnect.InitialDelayMs <= 0 || Reconnect.MaxDelayMs < Reconnect.InitialDelayMs)
            yield return "\"reconnect\" needs 0 < initialDelayMs <= maxDelayMs";
    }
}
