namespace Magpie.Tests.Fixtures;

/// <summary>One broker shared by the RabbitMQ test classes.</summary>
public sealed class RabbitMqFixture : IAsyncLifetime
{
    public RabbitMqBroker Broker { get; private set; } = null!;

    public async Task InitializeAsync() => Broker = await RabbitMqBroker.StartAsync();

    public async Task DisposeAsync() => await Broker.DisposeAsync();
}
