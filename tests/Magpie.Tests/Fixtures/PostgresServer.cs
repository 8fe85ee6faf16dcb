using DotNet.Testcontainers.Containers;
using Testcontainers.PostgreSql;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A real PostgreSQL the PostgreSQL endpoint's answers are compared with, picked in this order: <c>POSTGRES_ADDRESS</c>
/// (host:port) from the environment; a Testcontainers PostgreSQL container (<c>postgres:15</c>) when a Docker engine
/// answers; else Debian's server as a local process (<see cref="LocalPostgres"/>). Whichever it is, it lets the
/// <c>postgres</c> user in without a password, collates in C and reports times in UTC, as the comparisons assume (a
/// server named by the environment must be set up so).
/// </summary>
public sealed class PostgresServer(string host, int port, IAsyncDisposable owner) : IAsyncDisposable
{
    public string Host { get; } = host;
    public int Port { get; } = port;

    public string ConnectionString => $"Host={Host};Port={Port};Username=postgres;Database=postgres;Pooling=false";

    /// <summary>A connection string as another role to another database of the same server.</summary>
    public string ConnectionStringAs(string user, string database) => $"Host={Host};Port={Port};Username={user};Database={database}";

    public static async Task<PostgresServer> StartAsync()
    {
        if (Environment.GetEnvironmentVariable("POSTGRES_ADDRESS") is { Length: > 0 } address)
        {
            var colon = address.LastIndexOf(':');
            return new PostgresServer(address[..colon], int.Parse(address[(colon + 1)..]), new EnvironmentService("POSTGRES_ADDRESS"));
        }
        return await StartOwnedAsync();
    }

    /// <summary>A server this test run starts; a container on <paramref name="engine"/> when one is given.</summary>
    public static async Task<PostgresServer> StartOwnedAsync(ContainerEngine? engine = null)
    {
        var port = FreePort.Next();
        var builder = new PostgreSqlBuilder("postgres:15").WithPassword("postgres")
            .WithEnvironment("POSTGRES_HOST_AUTH_METHOD", "trust").WithEnvironment("POSTGRES_INITDB_ARGS", "--locale=C -E UTF8")
            .WithCommand("-c", "TimeZone=UTC").WithPortBinding(port, PostgreSqlBuilder.PostgreSqlPort);
        if (engine is not null) builder = builder.WithDockerEndpoint(engine.DockerHost);
        if (ContainerService.TryBuild(builder.Build) is { } container)
        {
            await container.StartAsync();
            return new PostgresServer("127.0.0.1", port, container);
        }
        var local = await LocalPostgres.StartAsync(port);
        return new PostgresServer("127.0.0.1", local.Port, local);
    }

    /// <summary>Whether it runs as a Testcontainers container.</summary>
    public bool InContainer => owner is IContainer;

    public ValueTask DisposeAsync() => owner.DisposeAsync();
}
