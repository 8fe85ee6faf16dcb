namespace Magpie.EtlSinks.Configuration;

/// <summary>
/// Where a task publishes: <c>{ "type": "rabbitmq", "url": "amqp://user:pass@host:5672/vhost" }</c> or
/// <c>{ "type": "kafka", "bootstrapServers": "host:9092", "options": { librdkafka setting: value } }</c>.
/// </summary>
public sealed record EtlConnection
{
    public const string RabbitMq = "rabbitmq";
    public const string Kafka = "kafka";

    public string Type { get; init; } = "";
    public string? Url { get; init; }
    public string? BootstrapServers { get; init; }
    public Dictionary<string, string>? Options { get; init; }

    public bool IsRabbitMq => string.Equals(Type, RabbitMq, StringComparison.OrdinalIgnoreCase);
    public bool IsKafka => string.Equals(Type, Kafka, StringComparison.OrdinalIgnoreCase);

    /// <summary>What is wrong with this connection string as written (not whether the broker answers: that shows in task stats).</summary>
    public IEnumerable<string> Problems()
    {
        if (IsRabbitMq)
        {
            if (string.IsNullOrWhiteSpace(Url)) yield return "a rabbitmq connection needs \"url\" (amqp://user:password@host:5672/vhost)";
            else if (!Uri.TryCreate(Url, UriKind.Absolute, out var uri) || uri.Scheme is not ("amqp" or "amqps") || string.IsNullOrEmpty(uri.Host))
                yield return $"\"url\" must be an amqp:// or amqps:// URI with a host, got '{Url}'";
        }
        else if (IsKafka)
        {
            if (string.IsNullOrWhiteSpace(BootstrapServers)) yield return "a kafka connection needs \"bootstrapServers\" (host:port[,host:port])";
        }
        else yield return $"\"type\" must be \"{RabbitMq}\" or \"{Kafka}\", got '{Type}'";
    }
}
