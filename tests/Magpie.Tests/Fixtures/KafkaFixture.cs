namespace Magpie.Tests.Fixtures;

/// <summary>One broker shared by the Kafka test classes (starting one takes seconds).</summary>
public sealed class KafkaFixture : IAsyncLifetime
{
    public KafkaBroker Broker { get; private set; } = null!;

    public async Task InitializeAsync() => Broker = await KafkaBroker.StartAsync();

    public async Task DisposeAsync() => await Broker.DisposeAsync();
}

[CollectionDefinition(Name)]
public sealed class KafkaCollection : ICollectionFixture<KafkaFixture>
{
    public const string Name = "kafka";
}
