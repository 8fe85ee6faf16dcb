using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Indexer;
using Magpie.Query;
using Magpie.Query.Postgres;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

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
        var indexer = IndexerModuleWiring.Options(settings, indexerInProcess, security);
        // Alone, the query target reads the definitions itself (from magpie.indexes); with the indexer, the indexer registered them.
        if (!indexerInProcess) builder.Services.AddIndexDefinitions(indexer);
        builder.Services.AddDocumentFilters(indexer);
        builder.Services.AddQueries(new QueryOptions
        {
            DataDir = indexer.DataDir, Kafka = indexer.Kafka, IndexerGroup = indexer.IndexerGroup, PeerClient = security.PeerClient,
            IngestUrl = settings.IngestUrl,
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
        MaxPendingConnections = pg.MaxPendingConnections,
    };

    public void Map(WebApplication app, MagpieSettings settings)
    {
        app.MapQueries();
        // Studio comes with the query target: what it shows is mostly what queries read.
        Studio.StudioEndpoints.MapStudio(app);
    }
}
