using Magpie.EtlSinks;
using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Tasks;
using Magpie.EtlSinks.QueueSinks;
using Magpie.EtlSinks.Runners;
using Magpie.Contracts.Documents;
using Microsoft.Extensions.Logging;
using Magpie.Kafka;
using Magpie.Kafka.Changes;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;

namespace Magpie.EtlSinks.Http;

/// <summary>The sinks target: ETL configuration, one runner per task and per queue sink, and the HTTP API.</summary>
public static class EtlModule
{
    /// <summary>Reads the embedded change feed when ingest runs in this process, else <c>magpie.changes</c> from Kafka.</summary>
    public static IServiceCollection AddEtlSinks(this IServiceCollection services, EtlOptions options)
    {
        services.AddSingleton(options);
        services.AddSingleton(new EtlConfigStore(options.DataDir));
        if (options.KafkaBootstrapServers is { } kafka)
        {
            KafkaNative.EnsureLoaded();
            services.TryAddSingleton<IChangeFeed>(new KafkaChangeFeed(kafka));
        }
        services.AddSingleton(sp => Tasks(sp, options)).AddHostedService(sp => sp.GetRequiredService<EtlTaskSupervisor>());
        services.AddSingleton(sp => Sinks(sp, options)).AddHostedService(sp => sp.GetRequiredService<QueueSinkSupervisor>());
        return services;
    }

    /// <summary>ETL tasks: read the change feed from a persisted position (forgotten with the task), publish to a broker.</summary>
    private static EtlTaskSupervisor Tasks(IServiceProvider sp, EtlOptions options)
    {
        var feed = sp.GetRequiredService<IChangeFeed>();
        var log = sp.GetRequiredService<ILoggerFactory>().CreateLogger("Magpie.Etl");
        return new(sp.GetRequiredService<EtlConfigStore>(), new(
            c => c.Tasks,
            (name, task, connection) => new EtlTaskRunner(name, task, connection, feed, options, log),
            (name, task) => IdleStatus(new EtlTaskStats(name), task).Snapshot(null),
            name => File.Delete(EtlTaskPosition.PathOf(options.DataDir, name)),
            EtlTaskStats.Gauges), log);
    }

    /// <summary>Queue sinks: consume a broker, write to the store in this process, or through ingest's API (IngestUrl) when there is none.</summary>
    private static QueueSinkSupervisor Sinks(IServiceProvider sp, EtlOptions options)
    {
        var writer = sp.GetService<IMessageWriter>() ?? options.Ingest;
        var log = sp.GetRequiredService<ILoggerFactory>().CreateLogger("Magpie.Sinks");
        return new(sp.GetRequiredService<EtlConfigStore>(), new(
            c => c.Sinks,
            (name, sink, connection) => new QueueSinkRunner(name, sink, connection, writer, options, log),
            (name, sink) => IdleStatus(new QueueSinkStats(name, sink.Sources), sink).Snapshot(),
            null, QueueSinkStats.Gauges), log);
    }

    /// <summary>What an entry without a runner shows: disabled, or about to start.</summary>
    private static TStatus IdleStatus<TStatus>(TStatus status, IRunnableEntry entry) where TStatus : RunnerStatus
    {
        if (entry.Disabled) status.Disabled();
        return status;
    }

    public static IEndpointRouteBuilder MapEtlSinks(this IEndpointRouteBuilder app, EtlOptions options) => app.MapEtlEndpoints(options).MapSinkEndpoints(options);
}
