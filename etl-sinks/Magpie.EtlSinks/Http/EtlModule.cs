using Magpie.EtlSinks;
using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Tasks;
using Magpie.EtlSinks.QueueSinks;
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
        services.AddSingleton<EtlSupervisor>().AddHostedService(sp => sp.GetRequiredService<EtlSupervisor>());
        // Queue sinks write to the store in this process, or through ingest's API (IngestUrl) when there is none.
        services.AddSingleton(sp => new QueueSinkSupervisor(sp.GetRequiredService<EtlConfigStore>(),
            sp.GetService<IMessageWriter>() ?? options.Ingest, options, sp.GetRequiredService<ILoggerFactory>()));
        services.AddHostedService(sp => sp.GetRequiredService<QueueSinkSupervisor>());
        return services;
    }

    public static IEndpointRouteBuilder MapEtlSinks(this IEndpointRouteBuilder app, EtlOptions options) => app.MapEtlEndpoints(options).MapSinkEndpoints(options);
}
