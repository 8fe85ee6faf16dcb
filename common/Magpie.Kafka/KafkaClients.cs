using Confluent.Kafka;
using Microsoft.Extensions.Logging;

namespace Magpie.Kafka;

/// <summary>Client configurations with the defaults every Magpie stage relies on.</summary>
public static class KafkaClients
{
    private static (string Servers, IReadOnlyDictionary<string, string> Settings)? _cluster;

    /// <summary>
    /// The deployment's own cluster and the librdkafka settings every client Magpie makes to it takes (<c>Magpie:KafkaClient</c>:
    /// <c>security.protocol</c>, <c>sasl.mechanism</c>, <c>sasl.username</c>/<c>sasl.password</c>, <c>ssl.ca.location</c>, …),
    /// set once at start. Clients to other clusters (an ETL connection's) keep their own settings only.
    /// </summary>
    public static void UseCluster(string bootstrapServers, IReadOnlyDictionary<string, string> settings) => _cluster = (bootstrapServers, settings);

    /// <summary>The cluster settings applied to <paramref name="config"/> when it points at the deployment's cluster.</summary>
    public static T ForCluster<T>(T config) where T : ClientConfig
    {
        if (_cluster is { } c && c.Servers == config.BootstrapServers)
            foreach (var (key, value) in c.Settings) config.Set(key, value);
        return config;
    }

    public static AdminClientConfig Admin(string bootstrapServers, string? clientId = null) =>
        ForCluster(new AdminClientConfig { BootstrapServers = bootstrapServers, ClientId = clientId });

    /// <summary>
    /// Idempotent producer (acks=all, ordered per partition), Java-compatible key placement
    /// (<see cref="Partitioner.Murmur2Random"/>), and no delivery timeout: while Kafka is down messages
    /// wait in the client instead of failing, which is what an outbox relay wants.
    /// </summary>
    public static ProducerConfig Producer(string bootstrapServers, string clientId) => ForCluster(new ProducerConfig
    {
        BootstrapServers = bootstrapServers,
        ClientId = clientId,
        EnableIdempotence = true,
        Acks = Acks.All,
        Partitioner = Partitioner.Murmur2Random,
        LingerMs = 5,
        MessageTimeoutMs = 0,
        QueueBufferingMaxMessages = 200_000,
        ReconnectBackoffMaxMs = 2_000,
    });

    public static ConsumerConfig Consumer(string bootstrapServers, string groupId) => ForCluster(new ConsumerConfig
    {
        BootstrapServers = bootstrapServers,
        GroupId = groupId,
        EnableAutoCommit = false,
        AutoOffsetReset = AutoOffsetReset.Earliest,
        IsolationLevel = IsolationLevel.ReadCommitted,
        ReconnectBackoffMaxMs = 2_000,
    });

    /// <summary>With a logger, librdkafka's own log lines go to it instead of stderr.</summary>
    public static IProducer<TKey, TValue> BuildProducer<TKey, TValue>(ProducerConfig config, ILogger? logger = null)
    {
        KafkaNative.EnsureLoaded();
        var builder = new ProducerBuilder<TKey, TValue>(config);
        if (logger is not null) builder.SetLogHandler((_, m) => Log(logger, m));
        return builder.Build();
    }

    /// <param name="configure">More for the builder, e.g. rebalance handlers.</param>
    public static IConsumer<TKey, TValue> BuildConsumer<TKey, TValue>(ConsumerConfig config, ILogger? logger = null,
        Action<ConsumerBuilder<TKey, TValue>>? configure = null)
    {
        KafkaNative.EnsureLoaded();
        var builder = new ConsumerBuilder<TKey, TValue>(config);
        if (logger is not null) builder.SetLogHandler((_, m) => Log(logger, m));
        configure?.Invoke(builder);
        return builder.Build();
    }

    /// <summary>A broker going away is an expected, retried condition for us: librdkafka errors log as warnings.</summary>
    private static void Log(ILogger logger, LogMessage m) => logger.Log(
        m.Level <= SyslogLevel.Warning ? LogLevel.Warning : m.Level <= SyslogLevel.Info ? LogLevel.Information : LogLevel.Debug,
        "librdkafka {Client} {Facility}: {Message}", m.Name, m.Facility, m.Message);
}
