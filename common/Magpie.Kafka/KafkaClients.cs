using Confluent.Kafka;
using Microsoft.Extensions.Logging;

namespace Magpie.Kafka;

/// <summary>Client configurations with the defaults every Magpie stage relies on.</summary>
public static class KafkaClients
{
    /// <summary>
    /// Idempotent producer (acks=all, ordered per partition), Java-compatible key placement
    /// (<see cref="Partitioner.Murmur2Random"/>), and no delivery timeout: while Kafka is down messages
    /// wait in the client instead of failing, which is what an outbox relay wants.
    /// </summary>
    public static ProducerConfig Producer(string bootstrapServers, string clientId) => new()
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
    };

    public static ConsumerConfig Consumer(string bootstrapServers, string groupId) => new()
    {
        BootstrapServers = bootstrapServers,
        GroupId = groupId,
        EnableAutoCommit = false,
        AutoOffsetReset = AutoOffsetReset.Earliest,
        IsolationLevel = IsolationLevel.ReadCommitted,
        ReconnectBackoffMaxMs = 2_000,
    };

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
