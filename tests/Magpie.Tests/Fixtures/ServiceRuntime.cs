using DotNet.Testcontainers.Builders;
using DotNet.Testcontainers.Containers;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// How a service the tests talk to (Kafka, RabbitMQ, PostgreSQL) is run. The broker fixtures pick one in the order they promise:
/// the environment's address (<see cref="EnvironmentService"/>), a Testcontainers container when a Docker engine
/// answers (<see cref="ContainerService"/>), else a local process this run starts and stops by pid.
/// </summary>
public interface IServiceRuntime : IAsyncDisposable
{
    /// <summary>Stops the service as an operator would (SIGTERM, docker stop); its data stays.</summary>
    Task StopAsync();

    /// <summary>Starts it again after <see cref="StopAsync"/>, on the same address.</summary>
    Task StartAgainAsync();
}

/// <summary>A service the environment runs: used, never stopped.</summary>
public sealed class EnvironmentService(string variable) : IServiceRuntime
{
    private InvalidOperationException NotOurs() => new($"the service named by {variable} belongs to the environment; a test can't stop or restart it");

    public Task StopAsync() => throw NotOurs();
    public Task StartAgainAsync() => throw NotOurs();
    public ValueTask DisposeAsync() => ValueTask.CompletedTask;
}

/// <summary>A Testcontainers container (Testcontainers.Kafka, .RabbitMq, .PostgreSql), removed on dispose.</summary>
public sealed class ContainerService(IContainer container, Func<Task> ready) : IServiceRuntime
{
    /// <summary>
    /// Testcontainers' own engine detection: building a container throws <see cref="DockerUnavailableException"/>
    /// when no Docker engine answers (a docker client alone is not enough), and the caller runs a local process.
    /// </summary>
    public static TContainer? TryBuild<TContainer>(Func<TContainer> build) where TContainer : class, IContainer
    {
        try { return build(); }
        catch (DockerUnavailableException) { return null; }
    }

    public Task StopAsync() => container.StopAsync();

    public async Task StartAgainAsync()
    {
        await container.StartAsync();
        await ready();
    }

    public ValueTask DisposeAsync() => container.DisposeAsync();
}
