using Confluent.Kafka;

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

    public static IProducer<TKey, TValue> BuildProducer<TKey, TValue>(ProducerConfig config)
    {
        KafkaNative.EnsureLoaded();
        return new ProducerBuilder<TKey, TValue>(config).Build();
    }

    public static IConsumer<TKey, TValue> BuildConsumer<TKey, TValue>(ConsumerConfig config)
    {
        KafkaNative.EnsureLoaded();
        return new ConsumerBuilder<TKey, TValue>(config).Build();
    }
}
