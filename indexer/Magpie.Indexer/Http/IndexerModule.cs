using Magpie.Indexer.Lucene;
using Magpie.Indexer.Engine;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Documents;
using Magpie.Kafka.Documents;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Magpie.Indexer.Definitions;
using Magpie.Indexer.Indexing;
using Magpie.Indexer.Shards;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Http;

/// <summary>
/// The indexer: one worker per index and shard, the /indexes API, over the definitions (<see cref="AddIndexDefinitions"/>). Embedded: definitions in
/// a file, one shard = the in-process change feed. Kafka mode: definitions in magpie.indexes, shards =
/// the partitions of magpie.changes this process owns in the indexer consumer group.
/// </summary>
public static class IndexerModule
{
    public static IServiceCollection AddIndexer(this IServiceCollection services, IndexerOptions options)
    {
        services.AddSingleton(options);
        services.AddSingleton<IIndexShards>(sp => options.Kafka is { } kafka
            ? new KafkaPartitionShards(kafka, options.IndexerGroup, options.AdvertisedUrl, options.KafkaPartitions, options.KafkaReplicationFactor,
                sp.GetRequiredService<ILoggerFactory>().CreateLogger("Magpie.Indexer.Shards"))
            : new WholeFeed(sp.GetRequiredService<IChangeFeed>()));
        // Kafka mode reads the store through an ingest process over HTTP, where one is named: load() in maps and query projections,
        // and the listing of an output collection a killed version left behind.
        var ingest = options.Kafka is not null && options.IngestUrl is { } url
            ? new Magpie.Http.IngestClient(url, options.PeerClient(TimeSpan.FromSeconds(30))) : null;
        // Output collections: through the store when ingest runs here (registered first), else through magpie.documents.
        if (options.Kafka is { } bootstrap)
            services.TryAddSingleton<IDocumentOutput>(sp => new DocumentTopicOutput(bootstrap, sp.GetRequiredService<ILoggerFactory>().CreateLogger("Magpie.Indexer.Output"),
                ingest is null ? null : ingest.ListAsync));
        // The search engine behind the seam (Engine/IIndexEngine): Lucene.Net in-process. The container disposes it after the registry.
        services.AddSingleton<IIndexEngine>(sp => new LuceneEngine(sp.GetRequiredService<ILoggerFactory>().CreateLogger("Magpie.Indexes.Engine"),
            (long)options.FacetCacheMegabytes << 20, (long)options.KnownIdsMegabytes << 20, options.VectorGraphMinimum));
        // Where load() reads: the store when ingest runs here (registered first), else the ingest process named.
        if (ingest is not null) services.TryAddSingleton<IDocumentLookup>(ingest);
        // Kafka mode: the embedding caches shared through magpie.embeddings (started before any index embeds).
        if (options.Kafka is { } embeddings)
            services.AddHostedService(sp => new EmbeddingCacheTopic(embeddings, options.KafkaPartitions, options.KafkaReplicationFactor,
                sp.GetRequiredService<Embeddings.Connections.EmbeddingConnections>(), sp.GetRequiredService<ILoggerFactory>().CreateLogger("Magpie.Indexer.Embeddings")));
        services.AddSingleton(sp => new IndexRegistry(sp.GetRequiredService<IndexDefinitionStore>(), sp.GetRequiredService<IIndexShards>(), options,
            sp.GetRequiredService<IIndexEngine>(), sp.GetRequiredService<ILoggerFactory>(), sp.GetService<IDocumentOutput>(),
            sp.GetService<IDocumentLookup>()));
        services.AddHostedService(sp => sp.GetRequiredService<IndexRegistry>());
        services.AddSingleton(sp => new IndexReplacements(sp.GetRequiredService<IndexDefinitionStore>(), sp.GetRequiredService<IndexRegistry>(),
            sp.GetRequiredService<IIndexShards>(), options, sp.GetRequiredService<ILoggerFactory>()));
        services.AddHostedService(sp => sp.GetRequiredService<IndexReplacements>());
        services.AddSingleton<Magpie.Contracts.Indexes.IIndexWaiter>(sp => sp.GetRequiredService<IndexRegistry>());
        services.AddSingleton<Magpie.Contracts.Search.ILocalShards>(sp => sp.GetRequiredService<IndexRegistry>());
        return services;
    }

    /// <summary>Documents run one at a time through a definition and a query as an index would run them (subscriptions filter with it).</summary>
    public static IServiceCollection AddDocumentFilters(this IServiceCollection services, IndexerOptions options) =>
        services.AddSingleton<Magpie.Contracts.Search.IDocumentFilters>(new Lucene.LuceneDocumentFilters(options.ScriptLimits));

    /// <summary>The definitions (the indexer needs them, a query process reads them too); registered before anything that uses them.</summary>
    public static IServiceCollection AddIndexDefinitions(this IServiceCollection services, IndexerOptions options)
    {
        // Indexing keeps the vectors it makes (per model) in the data directory: a rebuild, reset or replacement embeds no text twice.
        var connections = new Embeddings.Connections.EmbeddingConnections(cache: (Path.Combine(options.DataDir, "embeddings"), (long)options.EmbeddingCacheMegabytes << 20));
        services.AddSingleton<IIndexDefinitionLog>(sp => options.Kafka is { } kafka
            ? new KafkaDefinitionLog(kafka, sp.GetRequiredService<ILoggerFactory>().CreateLogger("Magpie.Indexer.Definitions"), connections)
            : new FileDefinitionLog(options.DataDir, connections));
        services.AddSingleton(sp => new IndexDefinitionStore(sp.GetRequiredService<IIndexDefinitionLog>(), MapReduce.DefinitionCompiler.Check))
            .AddHostedService(sp => sp.GetRequiredService<IndexDefinitionStore>());
        services.AddSingleton<Magpie.Contracts.Indexes.IIndexDefinitions>(sp => sp.GetRequiredService<IndexDefinitionStore>());
        services.AddSingleton(sp => sp.GetRequiredService<IIndexDefinitionLog>().Connections);
        return services;
    }

    public static IEndpointRouteBuilder MapIndexer(this IEndpointRouteBuilder app, IndexerOptions options)
    {
        app.MapIndexEndpoints(options);
        app.MapEmbeddingConnectionEndpoints();
        // Kafka mode: ingest processes ask here after a write with ?waitForIndexes=true.
        if (options.Kafka is not null) app.MapShardWait();
        return app;
    }
}
