using Magpie.Indexer.Http;
using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Hosting.Health;
using Magpie.Indexer;
using Magpie.Indexer.Indexing;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// indexer: one worker per index and shard on Lucene.Net, in process, and the /indexes API. Needs: index-definitions, a data
/// directory and the change feed — the local store's when ingest runs in the same process (one shard); otherwise Kafka: shards
/// = the partitions of magpie.changes this process owns in the indexer consumer group.
/// </summary>
public sealed class IndexerModuleWiring(bool ingestInProcess) : IMagpieModule
{
    public string Name => "indexer";

    /// <summary>What <see cref="AddServices"/> built (with the host's security), for <see cref="Map"/>.</summary>
    private IndexerOptions? _options;

    public string? Meter => Indexer.Indexing.IndexingMetrics.MeterName;

    public string? Unmet(MagpieSettings settings) => !ingestInProcess && settings.Embedded
        ? "the indexer target alone reads magpie.changes from Kafka: set --kafka (or run --target all)"
        : null;

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security)
    {
        builder.Services.AddIndexer(_options = Options(settings, ingestInProcess, security));
        builder.Services.AddReadinessCheck("indexes", (sp, ct) => sp.GetRequiredService<IndexRegistry>().UnansweringAsync(TimeSpan.FromSeconds(2), ct));
    }

    public void Map(WebApplication app, MagpieSettings settings)
    {
        app.MapIndexer(_options ?? throw new InvalidOperationException("the indexer's services were not added"));
    }

    /// <summary>The indexer stage's settings, read from <see cref="MagpieSettings"/> in this one place (definitions and filters use them too).</summary>
    internal static IndexerOptions Options(MagpieSettings s, bool embedded, HostSecurity security) => new()
    {
        IngestUrl = s.IngestUrl,
        PeerClient = security.PeerClient,
        DataDir = Path.GetFullPath(s.DataDir),
        Kafka = embedded || s.Embedded ? null : s.Kafka,
        IndexerGroup = s.IndexerGroup,
        AdvertisedUrl = string.IsNullOrWhiteSpace(s.AdvertisedUrl) ? HostSecurity.DefaultUrl(s) : s.AdvertisedUrl,
        KafkaPartitions = s.KafkaPartitions,
        KafkaReplicationFactor = s.KafkaReplicationFactor,
        FacetCacheMegabytes = s.FacetCacheMegabytes,
        KnownIdsMegabytes = s.KnownIdsMegabytes,
        VectorGraphMinimum = s.VectorGraphMinimum,
        EmbeddingCacheMegabytes = s.EmbeddingCacheMegabytes,
        Retry = s.Retry,
    };
}
