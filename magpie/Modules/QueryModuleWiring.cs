using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Query;
using Magpie.Query.Http;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// query: RQL over HTTP (paged and streamed), subscriptions, operations. Embedded: over the shards of the indexer in the same
/// process. Alone (Kafka): finds the indexer processes through their consumer group, fans each query out to them and merges.
/// </summary>
public sealed class QueryModuleWiring(bool indexerInProcess) : IMagpieModule
{
    public string Name => "query";

    public string? Meter => Query.QueryMetrics.MeterName;

    public string? Unmet(MagpieSettings settings) => !indexerInProcess && settings.Embedded
        ? "the query target alone asks indexer processes found through Kafka: set --kafka (or run --target all)"
        : null;

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security) =>
        builder.Services.AddQueries(new QueryOptions
        {
            DataDir = Path.GetFullPath(settings.DataDir), Kafka = indexerInProcess || settings.Embedded ? null : settings.Kafka,
            IndexerGroup = settings.IndexerGroup, PeerClient = security.PeerClient, IngestUrl = settings.IngestUrl,
        });

    public void Map(WebApplication app, MagpieSettings settings) => app.MapQueries();
}
