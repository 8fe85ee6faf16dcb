using Magpie.Indexer.Http;
using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Indexer;
using Magpie.Query;
using Magpie.Query.Http;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// index-definitions: the definitions every index and query plans with. <c>embedded</c> (the process indexes the local
/// store): a file in the data directory; otherwise the compacted <c>magpie.indexes</c>, which every indexer and query process
/// reads alike.
/// </summary>
public sealed class IndexDefinitionsWiring(bool embedded) : IMagpieModule
{
    public string Name => "index-definitions";

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security) =>
        builder.Services.AddIndexDefinitions(IndexerModuleWiring.Options(settings, embedded, security));
}

/// <summary>document-filters: a document run through a definition and a query one at a time, as an index would (subscriptions and operations match with it).</summary>
public sealed class DocumentFiltersWiring(bool embedded) : IMagpieModule
{
    public string Name => "document-filters";

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security) =>
        builder.Services.AddDocumentFilters(IndexerModuleWiring.Options(settings, embedded, security));
}

/// <summary>
/// shard-search: searches of the shards this process's indexer holds. With the whole index here, the query module asks them in
/// process; otherwise query processes ask them on <c>POST /shards/queries</c>.
/// </summary>
public sealed class ShardSearchWiring(bool answersQueryProcesses) : IMagpieModule
{
    public string Name => "shard-search";

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security) => builder.Services.AddLocalShards();

    public void Map(WebApplication app, MagpieSettings settings)
    {
        if (answersQueryProcesses) app.MapShardQueries();
    }
}
