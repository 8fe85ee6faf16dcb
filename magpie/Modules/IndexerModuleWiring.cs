using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Hosting.Health;
using Magpie.Indexer;
using Magpie.Indexer.Indexing;
using Magpie.Query;
using Magpie.Query.Postgres;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// indexer: index definitions and one worker per index and shard on Lucene.Net, in-process. Needs: a data directory
/// and the change feed — embedded when
/// ingest runs in the same process (one shard, definitions in the data directory); otherwise Kafka:
/// definitions in magpie.indexes, shards = the partitions of magpie.changes this process owns in the
/// indexer consumer group, answered to query processes on POST /shards/queries.
/// </summary>
public sealed class IndexerModuleWiring(bool ingestInProcess) : IMagpieModule
{
    public string Name => "indexer";

    public string? Meter => Indexer.Indexing.IndexingMetrics.MeterName;

    public string? Unmet(MagpieSettings settings) => !ingestInProcess && settings.Embedded
        ? "the indexer target alone reads magpie.changes from Kafka: set --kafka (or run --target all)"
        : null;

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security)
    {
        builder.Services.AddIndexer(Options(settings, ingestInProcess));
        builder.Services.AddLocalShards();
        builder.Services.AddReadinessCheck("indexes", (sp, ct) => sp.GetRequiredService<IndexRegistry>().UnansweringAsync(TimeSpan.FromSeconds(2), ct));
    }

    public void Map(WebApplication app, MagpieSettings settings)
    {
        app.MapIndexer(Options(settings, ingestInProcess));
        if (!ingestInProcess) app.MapShardQueries();
    }

    internal static IndexerOptions Options(MagpieSettings s, bool embedded) => new()
    {
        DataDir = Path.GetFullPath(s.DataDir),
        Kafka = embedded || s.Embedded ? null : s.Kafka,
        IndexerGroup = s.IndexerGroup,
        AdvertisedUrl = string.IsNullOrWhiteSpace(s.AdvertisedUrl) ? HostSecurity.DefaultUrl(s) : s.AdvertisedUrl,
        KafkaPartitions = s.KafkaPartitions,
        KafkaReplicationFactor = s.KafkaReplicationFactor,
        FacetCacheMegabytes = s.FacetCacheMegabytes,
        KnownIdsMegabytes = s.KnownIdsMegabytes,
    };
}

/// <summary>
/// query: RQL over HTTP (paged and streamed). Embedded: over the indexer module in the same process.
/// Alone (Kafka): reads definitions from magpie.indexes, finds the indexer processes through their
/// consumer group, fans each query out to them and merges.
/// </summary>
public sealed class QueryModuleWiring(bool indexerInProcess) : IMagpieModule
{
    public string Name => "query";

    public string? Meter => Query.QueryMetrics.MeterName;

    public string? Unmet(MagpieSettings settings) => !indexerInProcess && settings.Embedded
        ? "the query target alone asks indexer processes found through Kafka: set --kafka (or run --target all)"
        : null;

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security)
    {
        var indexer = IndexerModuleWiring.Options(settings, indexerInProcess);
        // Alone, the query target reads the definitions itself (from magpie.indexes); with the indexer, the indexer registered them.
        if (!indexerInProcess) builder.Services.AddIndexDefinitions(indexer);
        builder.Services.AddQueries(new QueryOptions
        {
            DataDir = indexer.DataDir, Kafka = indexer.Kafka, IndexerGroup = indexer.IndexerGroup, PeerClient = security.PeerClient,
        });
        if (settings.Pg.Port >= 0)
            builder.Services.AddPostgresEndpoint(sp => PgOptionsOf(settings.Pg, security, sp.GetRequiredService<Magpie.Security.FailedLogins>()));
    }

    private static PgOptions PgOptionsOf(PgSettings pg, HostSecurity security, Magpie.Security.FailedLogins failedLogins) => new()
    {
        Port = pg.Port,
        Address = security.PgAddress,
        Keys = security.Keys,
        KeysRequired = security.KeysRequiredWithoutKeys,
        FailedLogins = failedLogins,
        AllowCleartext = pg.AllowCleartext,
        Certificate = security.Certificate,
        MaxConnections = pg.MaxConnections,
        StatementTimeout = TimeSpan.FromSeconds(pg.StatementTimeoutSeconds),
        StartupTimeout = TimeSpan.FromSeconds(pg.StartupTimeoutSeconds),
        MaxPendingConnections = Math.Max(1, pg.MaxPendingConnections),
    };

    public void Map(WebApplication app, MagpieSettings settings) => app.MapQueries();
}
