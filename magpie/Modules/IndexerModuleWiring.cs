using Magpie.Hosting;
using Magpie.Indexer;
using Magpie.Query;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// indexer: index definitions and one Lucene worker per index on the change feed. Needs: a data directory,
/// the change feed (embedded: ingest in the same process), a Java 17 runtime and Debian's liblucene8-java
/// once an index is defined. Kafka-mode indexer processes are not built yet.
/// </summary>
public sealed class IndexerModuleWiring : IMagpieModule
{
    public string Name => "indexer";
    public bool Built => true;

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings) =>
        builder.Services.AddIndexer(new IndexerOptions { DataDir = Path.GetFullPath(settings.DataDir) });

    public void Map(WebApplication app, MagpieSettings settings) =>
        app.MapIndexer(new IndexerOptions { DataDir = Path.GetFullPath(settings.DataDir) });
}

/// <summary>query: RQL over HTTP (paged and streamed) against the indexes of this process. Needs: the indexer module.</summary>
public sealed class QueryModuleWiring : IMagpieModule
{
    public string Name => "query";
    public bool Built => true;

    public void Map(WebApplication app, MagpieSettings settings) => app.MapQueries();
}
