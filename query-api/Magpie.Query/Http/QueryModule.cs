using Magpie.Query;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Contracts.Changes;
using Magpie.Kafka.Changes;
using Magpie.Query.Postgres;
using Magpie.Query.Postgres.Sql;
using Magpie.Query.Shards;
using Magpie.Query.Subscriptions;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;

namespace Magpie.Query.Http;

/// <summary>
/// Queries. Embedded: over the indexer in the same process. Kafka mode: the query target fans out to the
/// indexer processes (found through their consumer group) and merges; each indexer answers for its shards.
/// </summary>
public static class QueryModule
{
    /// <summary>The shards this process's indexer holds, searchable here (embedded queries, and indexers answering /shards/queries).</summary>
    public static IServiceCollection AddLocalShards(this IServiceCollection services) =>
        services.AddSingleton<SnapshotLeases>().AddSingleton(sp => new LocalShardOwner(sp.GetRequiredService<IIndexDefinitions>(),
            sp.GetRequiredService<ILocalShards>(), sp.GetService<IDocumentLookup>(), sp.GetRequiredService<SnapshotLeases>(),
            sp.GetService<Embeddings.Connections.EmbeddingConnections>()));

    /// <summary>Queries over the index definitions (<see cref="IIndexDefinitions"/>, registered by the indexer or, alone, its definitions module).</summary>
    public static IServiceCollection AddQueries(this IServiceCollection services, QueryOptions options)
    {
        if (options.Kafka is { } kafka)
        {
            services.AddSingleton<IShardDirectory>(_ => new KafkaShardDirectory(kafka, options.IndexerGroup, options.PeerClient(TimeSpan.FromMinutes(5))));
            // Read your writes through Kafka: how far the ingest applied each input partition (waitForInputOffsets).
            services.AddSingleton(sp => new InputOffsets(kafka, sp.GetRequiredService<Microsoft.Extensions.Logging.ILogger<InputOffsets>>()))
                .AddHostedService(sp => sp.GetRequiredService<InputOffsets>());
        }
        else services.AddSingleton<IShardDirectory>(sp => new LocalShardDirectory(sp.GetRequiredService<LocalShardOwner>()));
        // Subscriptions follow the change log embedded, every partition of magpie.changes in Kafka mode; their state is this
        // process's files embedded, magpie.subscriptions (shared by every query process) in Kafka mode.
        if (options.Kafka is { } shared)
            services.AddSingleton<ISubscriptionStates>(sp => sp.GetRequiredService<KafkaSubscriptionStates>())
                .AddSingleton(sp => new KafkaSubscriptionStates(shared, sp.GetRequiredService<Microsoft.Extensions.Logging.ILogger<KafkaSubscriptionStates>>()))
                .AddHostedService(sp => sp.GetRequiredService<KafkaSubscriptionStates>());
        else services.AddSingleton<ISubscriptionStates>(new FileSubscriptionStates(options.DataDir));
        services.AddSingleton(sp => new SubscriptionRegistry(sp.GetRequiredService<ISubscriptionStates>(),
            options.Kafka is { } bootstrap ? new KafkaChangeFeed(bootstrap) : sp.GetRequiredService<IChangeFeed>(), sp.GetRequiredService<IDocumentFilters>(),
            options.Kafka is null ? sp.GetService<IDocumentLookup>() : null));
        // Update and delete by query write through the store's write path: the store here (embedded), or ingest over HTTP.
        var ingest = options.Kafka is not null && options.IngestUrl is { } url ? new Magpie.Http.IngestClient(url, options.PeerClient(TimeSpan.FromMinutes(2))) : null;
        // Kafka mode: a query waiting for non-stale results asks ingest what it stored but has yet to publish (in process when combined).
        if (ingest is not null) services.TryAddSingleton<IRelayedChanges>(ingest);
        services.AddSingleton(sp => new Operations.OperationRegistry(options.DataDir, sp.GetRequiredService<QueryCoordinator>(),
            ingest ?? sp.GetService<IDocumentWriter>(), ingest ?? sp.GetService<IDocumentLookup>(),
            sp.GetRequiredService<Microsoft.Extensions.Logging.ILoggerFactory>().CreateLogger("Magpie.Operations"),
            sp.GetService<IDocumentFilters>(), sp.GetService<IIndexDefinitions>()));
        services.AddHostedService(sp => sp.GetRequiredService<Operations.OperationRegistry>());
        return services.AddSingleton<AutoIndexes>().AddSingleton<QueryCoordinator>();
    }

    /// <summary>The PostgreSQL wire endpoint (psql, Npgsql, Grafana's PostgreSQL data source) over the same coordinator.</summary>
    public static IServiceCollection AddPostgresEndpoint(this IServiceCollection services, Func<IServiceProvider, PgOptions> options)
    {
        services.AddSingleton(options);
        services.AddSingleton(sp => new IndexSchemas(sp.GetRequiredService<IIndexDefinitions>(),
            sp.GetService<ILocalShards>(), sp.GetRequiredService<QueryCoordinator>()));
        services.AddSingleton<DuckDbDatabase>().AddSingleton<SqlRunner>().AddSingleton<DuckDbEvaluator>();
        services.AddSingleton<Func<IPgStatements>>(sp => () => new PgStatements(sp.GetRequiredService<SqlRunner>(),
            sp.GetRequiredService<DuckDbEvaluator>(), sp.GetRequiredService<QueryCoordinator>()));
        services.AddSingleton<PgServer>().AddHostedService(sp => sp.GetRequiredService<PgServer>());
        return services;
    }

    public static IEndpointRouteBuilder MapQueries(this IEndpointRouteBuilder app)
    {
        app.MapQueryEndpoints();
        app.MapSubscriptionEndpoints();
        app.MapOperationEndpoints();
        return app;
    }

    public static IEndpointRouteBuilder MapShardQueries(this IEndpointRouteBuilder app) => app.MapShardQueryEndpoint();
}
