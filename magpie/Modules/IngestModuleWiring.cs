using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Hosting.Health;
using Magpie.Ingest.Documents;
using Magpie.Ingest;
using Magpie.Ingest.Http;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// ingest: the document store on FASTER and the write API; with Kafka, also the input-topic consumer
/// and the relay to <c>magpie.changes</c>. Needs: a data directory; Kafka optional. Without the indexer in
/// the same process, writes with <c>?waitForIndexes=true</c> ask the indexer consumer group's processes.
/// </summary>
public sealed class IngestModuleWiring(bool indexerInProcess) : IMagpieModule
{
    public string Name => "ingest";

    public string? Meter => Ingest.Documents.IngestMetrics.MeterName;

    /// <summary>A data directory that is read-only, full or not a directory stops the start with one line, before anything opens.</summary>
    public string? Unmet(MagpieSettings settings) => Options(settings).Store is var store && DocumentStore.Unusable(store) is { } why
        ? $"cannot use the data directory {store.Directory}: {why}"
        : null;

    // The store is opened (recovered from its checkpoint and log tail) before HTTP serves; ready while it can take a write.
    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security)
    {
        builder.Services.AddIngest(Options(settings) with { PeerClient = security.PeerClient });
        builder.Services.AddReadinessCheck("store", (sp, ct) => sp.GetRequiredService<DocumentStore>().WriteProblemAsync(ct));
    }

    public void Map(WebApplication app, MagpieSettings settings) => app.MapIngest(Options(settings));

    private IngestOptions Options(MagpieSettings s) => new()
    {
        IndexerGroup = indexerInProcess ? null : s.IndexerGroup,
        DataDir = Path.GetFullPath(s.DataDir),
        KafkaBootstrapServers = s.Embedded ? null : s.Kafka,
        KafkaPartitions = s.KafkaPartitions,
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
