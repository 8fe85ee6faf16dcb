using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Hosting.Health;
using Magpie.Ingest.Documents;
using Magpie.Ingest;
using Magpie.Ingest.Http;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// documents: the document store on FASTER and the write API; with Kafka, the magpie.documents consumer. Needs a data directory;
/// Kafka optional.
/// </summary>
public sealed class DocumentStoreWiring(bool indexerInProcess) : IMagpieModule
{
    public string Name => "documents";

    public string? Meter => Ingest.Documents.IngestMetrics.MeterName;

    /// <summary>A data directory that is read-only, full or not a directory stops the start with one line, before anything opens.</summary>
    public string? Unmet(MagpieSettings settings) => IngestSettings.Of(settings, indexerInProcess).Store is var store && DocumentStore.Unusable(store) is { } why
        ? $"cannot use the data directory {store.Directory}: {why}"
        : null;

    // The store is opened (recovered from its checkpoint and log tail) before HTTP serves; ready while it can take a write.
    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security)
    {
        builder.Services.AddDocumentStore(IngestSettings.Of(settings, indexerInProcess) with { PeerClient = security.PeerClient });
        builder.Services.AddReadinessCheck("store", async (sp, ct) =>
        {
            if (sp.GetService<Ingest.Partitions.StorePartitions>() is not { } partitions) return await sp.GetRequiredService<DocumentStore>().WriteProblemAsync(ct);
            foreach (var partition in partitions.Serving)
                if (await partition.Store.WriteProblemAsync(ct) is { } problem) return $"partition {partition.Number}: {problem}";
            return null;
        });
    }

    public void Map(WebApplication app, MagpieSettings settings) => app.MapDocumentStore(IngestSettings.Of(settings, indexerInProcess));
}

/// <summary>
/// change-feed: the store's log read as a feed (embedded, for the stages in this process) and compacted; with Kafka, the relay to
/// <c>magpie.changes</c>. Without the indexer in the same process, writes with <c>?waitForIndexes=true</c> ask the indexer consumer
/// group's processes.
/// </summary>
public sealed class ChangeFeedWiring(bool indexerInProcess) : IMagpieModule
{
    public string Name => "change-feed";

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security) =>
        builder.Services.AddChangeFeed(IngestSettings.Of(settings, indexerInProcess) with { PeerClient = security.PeerClient });

    public void Map(WebApplication app, MagpieSettings settings) => app.MapChangeFeed();
}

/// <summary>The ingest stage's options, from the settings: one reading for both of its modules.</summary>
internal static class IngestSettings
{
    public static IngestOptions Of(MagpieSettings s, bool indexerInProcess) => new()
    {
        IndexerGroup = indexerInProcess ? null : s.IndexerGroup,
        DataDir = Path.GetFullPath(s.DataDir),
        KafkaBootstrapServers = s.Embedded ? null : s.Kafka,
        KafkaPartitions = s.KafkaPartitions,
        Partitioned = s.PartitionedStore && !s.Embedded,
        AdvertisedUrl = string.IsNullOrWhiteSpace(s.AdvertisedUrl) ? HostSecurity.DefaultUrl(s) : s.AdvertisedUrl,
        KafkaAckTimeout = TimeSpan.FromSeconds(s.WaitForKafkaSeconds ?? (s.PartitionedStore ? 10 : 0)),
        KafkaReplicationFactor = s.KafkaReplicationFactor,
        ConsumerGroup = s.ConsumerGroup,
        MaxDocumentBytes = (int)s.MaxRequestBodyBytes,
        MaxJsonDepth = s.MaxJsonDepth,
        CheckpointInterval = TimeSpan.FromSeconds(s.CheckpointIntervalSeconds),
        RelayStallTimeout = TimeSpan.FromSeconds(s.RelayStallSeconds),
        Retry = s.Retry,
        MinFreeDiskBytes = s.MinFreeDiskMegabytes * (1L << 20),
        LogMemoryBytes = s.LogMemoryMegabytes * (1L << 20),
        Compaction = s.Compaction.Enabled
            ? new Ingest.Changes.CompactionOptions(new RevisionRetention(s.Compaction.Revisions, s.Compaction.RevisionsSeconds is { } t ? TimeSpan.FromSeconds(t) : null),
                TimeSpan.FromSeconds(s.Compaction.IntervalSeconds), s.Compaction.MinMegabytes * (1L << 20))
            : null,
    };
}
