using Magpie.Contracts;
using Magpie.Ingest;
using Magpie.Http;
using Magpie.Contracts.Changes;
using Magpie.Ingest.Changes;
using Magpie.Ingest.Documents;
using Magpie.Ingest.Kafka;
using Magpie.Ingest.Partitions;
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
        if (options.Partitioned) return services.AddPartitionedStore(options);
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
            services.AddSingleton<InputBatches>();
            services.AddSingleton<DocumentTopicConsumer>().AddHostedService(sp => sp.GetRequiredService<DocumentTopicConsumer>());
        }
        return services;
    }

    /// <summary>
    /// A partitioned store: the partitions this process is assigned (each with its own feed, compaction and relay, so nothing of
    /// the single store's feed is registered), the router that sends the rest to their owners, and the consumer whose group
    /// assignment is the ownership. Stages that read the store in process are refused with a partitioned store (SettingsCheck).
    /// </summary>
    private static IServiceCollection AddPartitionedStore(this IServiceCollection services, IngestOptions options)
    {
        KafkaNative.EnsureLoaded();
        services.AddSingleton<StorePartitions>();
        services.AddSingleton<PartitionRouter>();
        // Registered before the consumer, so it stops after it: closing the consumer hands the partitions on first.
        services.AddHostedService<PartitionsLifetime>();
        services.AddSingleton<InputBatches>();
        services.AddSingleton<PartitionedTopicConsumer>().AddHostedService(sp => sp.GetRequiredService<PartitionedTopicConsumer>());
        return services;
    }

    public static IServiceCollection AddChangeFeed(this IServiceCollection services, IngestOptions options)
    {
        if (options.KafkaBootstrapServers is not null)
        {
            // Which magpie.changes offsets hold each input offset applied (the consumer reports to it when it is here).
            services.AddSingleton<InputProgress>().AddHostedService(sp => sp.GetRequiredService<InputProgress>());
            // A single store's writes wait on its relay; a partitioned store's on their partition's (IndexWait).
            if (options.IndexerGroup is { } group)
                services.AddSingleton<Magpie.Contracts.Indexes.IIndexWaiter>(sp => new KafkaIndexWaiter(
                    new IndexerGroup(options.KafkaBootstrapServers, group), options.PeerClient(TimeSpan.FromMinutes(6)), sp.GetService<ChangeRelay>()));
        }
        // A partitioned store's partitions each have their own feed, compaction and relay (StorePartition).
        if (options.Partitioned) return services;
        services.AddSingleton<ChangeLogTail>();
        services.AddSingleton<ChangeLogReaders>();
        if (options.Compaction is { } compaction)
            services.AddSingleton(sp => new ChangeLogCompactor(sp.GetRequiredService<DocumentStore>(), sp.GetRequiredService<ChangeLogReaders>(), compaction,
                sp.GetRequiredService<ILoggerFactory>().CreateLogger<ChangeLogCompactor>())).AddHostedService(sp => sp.GetRequiredService<ChangeLogCompactor>());
        services.AddSingleton<IChangeFeed, EmbeddedChangeFeed>();
        if (options.KafkaBootstrapServers is not null)
            services.AddSingleton<ChangeRelay>().AddHostedService(sp => sp.GetRequiredService<ChangeRelay>())
                .AddSingleton<IRelayedChanges>(sp => sp.GetRequiredService<ChangeRelay>());
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
            input = services.GetService<InputBatches>()?.Status(),
            partitions = services.GetService<StorePartitions>()?.Serving.Select(p => new
            {
                partition = p.Number, lastEtag = p.Store.LastEtag, relay = p.Relay.Status(), changeLog = p.Compactor?.Status(),
                takeover = new { kept = p.Takeover.Kept, restored = p.Takeover.Restored, ms = (long)p.Takeover.Took.TotalMilliseconds },
            }),
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
        app.MapGet("/changes/relayed", async (int? timeoutMs, bool? local, HttpContext ctx, IServiceProvider services, CancellationToken ct) =>
        {
            if (services.GetService<PartitionRouter>() is { } router)
                return await PartitionedRelays.EndsAsync(ctx, router, TimeSpan.FromMilliseconds(Math.Clamp(timeoutMs ?? 10_000, 0, 300_000)), local == true);
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
            IReadOnlyList<IngestMetrics.ObservedStore> observed = [new(null, store, relay is null ? null : relay.Lag)];
            IngestMetrics.Observe(() => observed, relayed: relay is not null);
            return Task.CompletedTask;
        }

        public async Task StopAsync(CancellationToken cancellationToken) => await store.DisposeAsync();
    }

    /// <summary>Reports the partitions held on <c>/metrics</c>, and closes those still held when the process stops.</summary>
    private sealed class PartitionsLifetime(StorePartitions partitions) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken)
        {
            IngestMetrics.Observe(() => [.. partitions.Serving.Select(p => new IngestMetrics.ObservedStore(p.Number, p.Store, p.Relay.Lag))], relayed: true);
            return Task.CompletedTask;
        }

        public async Task StopAsync(CancellationToken cancellationToken) => await partitions.DisposeAsync();
    }
}
