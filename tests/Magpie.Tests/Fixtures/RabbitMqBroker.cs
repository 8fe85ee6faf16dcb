using Testcontainers.RabbitMq;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A real RabbitMQ broker for tests, picked in this order: <c>RABBITMQ_URL</c> from the environment; a Testcontainers
/// RabbitMQ container when a Docker engine answers; else Debian's <c>rabbitmq-server</c> on free ports with its own
/// epmd, Erlang cookie and data in a temp dir, stopped by pid on dispose (<see cref="LocalRabbitMq"/>).
/// </summary>
public sealed class RabbitMqBroker(string url, IServiceRuntime runtime) : IAsyncDisposable
{
    public string Url { get; } = url;

    public static async Task<RabbitMqBroker> StartAsync()
    {
        if (Environment.GetEnvironmentVariable("RABBITMQ_URL") is { Length: > 0 } url) return new RabbitMqBroker(url, new EnvironmentService("RABBITMQ_URL"));
        return await StartOwnedAsync();
    }

    /// <summary>A broker this test run controls (needed to stop and restart it); a container on <paramref name="engine"/> when one is given.</summary>
    public static async Task<RabbitMqBroker> StartOwnedAsync(ContainerEngine? engine = null)
    {
        var port = FreePort.Next();
        var builder = new RabbitMqBuilder("rabbitmq:3.13").WithUsername("guest").WithPassword("guest").WithPortBinding(port, RabbitMqBuilder.RabbitMqPort);
        if (engine is not null) builder = builder.WithDockerEndpoint(engine.DockerHost);
        if (ContainerService.TryBuild(builder.Build) is { } container)
        {
            await container.StartAsync();
            var url = container.GetConnectionString();
            return new RabbitMqBroker(url, new ContainerService(container, () => WaitReadyAsync(url, () => true, () => "")));
        }
        var local = await LocalRabbitMq.StartAsync(port);
        return new RabbitMqBroker(local.Url, local);
    }

    /// <summary>
    /// The port opens before the broker accepts logins: wait for a real AMQP connection. Past <paramref name="within"/>
    /// (90 s unless told) it throws a <see cref="TimeoutException"/> carrying the broker's last output lines, so a start
    /// that hangs says where it hung.
    /// </summary>
    public static async Task WaitReadyAsync(string url, Func<bool> alive, Func<string> output, TimeSpan? within = null)
    {
        var limit = within ?? TimeSpan.FromSeconds(90);
        var deadline = DateTime.UtcNow + limit;
        while (true)
        {
            if (!alive()) throw new InvalidOperationException($"rabbitmq-server exited:\n{output()}");
            try
            {
                await using var c = await new RabbitMQ.Client.ConnectionFactory { Uri = new Uri(url) }.CreateConnectionAsync();
                return;
            }
            catch (Exception) when (DateTime.UtcNow < deadline) { await Task.Delay(250); }
            catch (Exception e)
            {
                throw new TimeoutException($"RabbitMQ at {new Uri(url).Authority} did not accept a connection within {limit}; its last output:\n{output()}", e);
            }
        }
    }

    /// <summary>CPU time the broker's Erlang VM has used, when this run started it as a local process (benchmarks split costs with it).</summary>
    public TimeSpan? ServerCpu() => (runtime as LocalRabbitMq)?.ServerCpu();

    /// <summary>Whether it runs as a Testcontainers container.</summary>
    public bool InContainer => runtime is ContainerService;

    /// <summary>Stops the broker as an operator would (SIGTERM to the Erlang VM / docker stop) and waits until it is gone.</summary>
    public Task StopAsync() => runtime.StopAsync();

    public Task RestartAsync() => runtime.StartAgainAsync();

    public ValueTask DisposeAsync() => runtime.DisposeAsync();
}
