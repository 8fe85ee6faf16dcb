using Magpie.Contracts;
using Magpie.Ingest;
using Magpie.Http;
using Magpie.Contracts.Changes;
using Magpie.Ingest.Changes;
using Magpie.Ingest.Documents;
using Magpie.Ingest.Kafka;
using Magpie.Kafka;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Http;

/// <summary>
/// The ingest target's two modules. <see cref="AddDocumentStore"/>: the store, its readers and writers, the write API and (with
/// Kafka) the magpie.documents consumer. <see cref="AddChangeFeed"/>: what reads the store's log as a feed: the embedded feed
/// the in-process stages read, compaction, and (with Kafka) the relay to magpie.changes and the waits on it.
/// </summary>
public static class IngestModule
{
    public static IServiceCollection AddDocumentStore(this IServiceCollection services, IngestOptions options)
    {
        services.AddSingleton(options);
        services.AddSingleton(sp => DocumentStore.OpenAsync(options.Store, sp.GetRequiredService<ILoggerFactory>().CreateLogger("Magpie.Documents")).GetAwaiter().GetResult());
        services.AddSingleton<Magpie.Contracts.Documents.IDocumentLookup, StoreDocumentLookup>();
        services.AddSingleton<Magpie.Contracts.Documents.IDocumentOutput, StoreDocumentOutput>();
        services.AddSingleton<Magpie.Contracts.Documents.IDocumentWriter, StoreDocumentWriter>();
        services.AddSingleton<Magpie.Contracts.Documents.IMessageWriter>(sp => new StoreMessageWriter(sp.GetRequiredService<DocumentStore>(), options.MaxJsonDepth));
        // Opens the store at start-up (not on the first request) and disposes it last, after a final checkpoint.
        services.AddHostedService<StoreLifetime>();
        if (options.KafkaBootstrapServers is not null)
        {
            // Fail at start-up, with the fix in the message, rather than retrying a missing librdkafka forever.
            KafkaNative.EnsureLoaded();
            services.AddSingleton<DocumentTopicConsumer>().AddHostedService(sp => sp.GetRequiredService<DocumentTopicConsumer>());
        }
        return services;
    }

    public static IServiceCollection AddChangeFeed(this IServiceCollection services, IngestOptions options)
    {
        services.AddSingleton<ChangeLogTail>();
        services.AddSingleton<ChangeLogReaders>();
        if (options.Compaction is { } compaction)
            services.AddSingleton(sp => new ChangeLogCompactor(sp.GetRequiredService<DocumentStore>(), sp.GetRequiredService<ChangeLogReaders>(), compaction,
                sp.GetRequiredService<ILoggerFactory>().CreateLogger<ChangeLogCompactor>())).AddHostedService(sp => sp.GetRequiredService<ChangeLogCompactor>());
        services.AddSingleton<IChangeFeed, EmbeddedChangeFeed>();
        if (options.KafkaBootstrapServers is not null)
        {
            // Which magpie.changes offsets hold each input offset applied (the consumer reports to it when it is here).
            services.AddSingleton<InputProgress>().AddHostedService(sp => sp.GetRequiredService<InputProgress>());
            services.AddSingleton<ChangeRelay>().AddHostedService(sp => sp.GetRequiredService<ChangeRelay>())
                .AddSingleton<IRelayedChanges>(sp => sp.GetRequiredService<ChangeRelay>());
            if (options.IndexerGroup is { } group)
                services.AddSingleton<Magpie.Contracts.Indexes.IIndexWaiter>(sp => new KafkaIndexWaiter(sp.GetRequiredService<ChangeRelay>(),
                    new IndexerGroup(options.KafkaBootstrapServers, group), options.PeerClient(TimeSpan.FromMinutes(6))));
        }
        return services;
    }

    public static IEndpointRouteBuilder MapDocumentStore(this IEndpointRouteBuilder app, IngestOptions options)
    {
        app.MapDocumentEndpoints(options.MaxJsonDepth);
        app.MapMessageWriteEndpoints(options.MaxJsonDepth);
        // Kafka side of ingest: input consumed, dead letters, and how far the relay is behind the log.
        app.MapGet("/stats/pipeline", (IServiceProvider services) => Results.Ok(new
        {
            kafka = options.KafkaBootstrapServers,
            input = services.GetService<DocumentTopicConsumer>()?.Status(),
            // Per input partition: the next offset applied, its etag, and the magpie.changes offsets holding it (waitForInputOffsets).
            inputApplied = services.GetService<InputProgress>()?.Published.Values.OrderBy(p => p.Partition),
            relay = services.GetService<ChangeRelay>()?.Status(),
            changeLog = services.GetService<ChangeLogCompactor>()?.Status(),
        }));
        return app;
    }

    public static IEndpointRouteBuilder MapChangeFeed(this IEndpointRouteBuilder app)
    {
        // Query processes ask before answering non-stale: which magpie.changes offsets hold everything stored now (IRelayedChanges).
        app.MapGet("/changes/relayed", async (int? timeoutMs, IServiceProvider services, CancellationToken ct) =>
        {
            if (services.GetService<IRelayedChanges>() is not { } relayed) return Problems.NotFound("this ingest publishes no change topic (embedded)");
            var timeout = TimeSpan.FromMilliseconds(Math.Clamp(timeoutMs ?? 10_000, 0, 300_000));
            return await relayed.EndsAsync(timeout, ct) is { } ends ? Results.Ok(new { offsets = ends })
                : Problems.Of(ErrorKind.Unavailable, "the relay has not published every stored change to magpie.changes in time (is Kafka reachable?)");
        });
        return app;
    }

    private sealed class StoreLifetime(DocumentStore store, IServiceProvider services) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken)
        {
            var relay = services.GetService<ChangeRelay>();
            IngestMetrics.Observe(store, relay is null ? null : () => relay.Lag());
            return Task.CompletedTask;
        }

        public async Task StopAsync(CancellationToken cancellationToken) => await store.DisposeAsync();
    }
}
