using Testcontainers.Kafka;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A real Kafka broker for tests, picked in this order: <c>KAFKA_BOOTSTRAP_SERVERS</c> from the environment; a
/// Testcontainers Kafka container when a Docker engine answers; else a local single-node KRaft broker started from
/// <c>KAFKA_HOME</c> (default <c>../shared/kafka</c>) in a temp dir, stopped by pid on dispose (<see cref="LocalKafka"/>).
/// </summary>
public sealed class KafkaBroker(string bootstrapServers, IServiceRuntime runtime) : IAsyncDisposable
{
    public string BootstrapServers { get; } = bootstrapServers;

    /// <summary>The environment's broker if there is one, else one of our own.</summary>
    public static async Task<KafkaBroker> StartAsync()
    {
        if (Environment.GetEnvironmentVariable("KAFKA_BOOTSTRAP_SERVERS") is { Length: > 0 } servers)
            return new KafkaBroker(servers, new EnvironmentService("KAFKA_BOOTSTRAP_SERVERS"));
        return await StartOwnedAsync();
    }

    /// <summary>A broker this test run controls (needed to stop and restart it); a container on <paramref name="engine"/> when one is given.</summary>
    public static async Task<KafkaBroker> StartOwnedAsync(ContainerEngine? engine = null)
    {
        // A fixed host port, so a restarted container keeps the address clients were given.
        var port = FreePort.Next();
        var builder = new KafkaBuilder("apache/kafka:3.9.1").WithPortBinding(port, KafkaBuilder.KafkaPort);
        if (engine is not null) builder = builder.WithDockerEndpoint(engine.DockerHost);
        if (ContainerService.TryBuild(builder.Build) is { } container)
        {
            await container.StartAsync();
            return new KafkaBroker(container.GetBootstrapAddress(), new ContainerService(container, () => FreePort.WaitOpenAsync(port, TimeSpan.FromSeconds(90))));
        }
        var local = await LocalKafka.StartAsync(port);
        return new KafkaBroker(local.BootstrapServers, local);
    }

    public static string KafkaHome => LocalKafka.KafkaHome;

    /// <summary>Whether it runs as a Testcontainers container.</summary>
    public bool InContainer => runtime is ContainerService;

    /// <summary>Stops the broker as an operator would (SIGTERM / docker stop) and waits until it is gone.</summary>
    public Task StopAsync() => runtime.StopAsync();

    public Task RestartAsync() => runtime.StartAgainAsync();

    public ValueTask DisposeAsync() => runtime.DisposeAsync();
}
