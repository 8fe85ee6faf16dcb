using Magpie.Indexer.Definitions;
using Magpie.Indexer.Http;
using Magpie.Indexer.Indexing;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;

namespace Magpie.Indexer;

/// <summary>The indexer: definitions, one worker per index on the change feed, the /indexes API.</summary>
public static class IndexerModule
{
    public static IServiceCollection AddIndexer(this IServiceCollection services, IndexerOptions options)
    {
        services.AddSingleton(options);
        services.AddSingleton(new IndexDefinitionStore(options.DataDir));
        services.AddSingleton<IndexRegistry>().AddHostedService(sp => sp.GetRequiredService<IndexRegistry>());
        services.AddSingleton<Magpie.Contracts.Indexes.IIndexWaiter>(sp => sp.GetRequiredService<IndexRegistry>());
        return services;
    }

    public static IEndpointRouteBuilder MapIndexer(this IEndpointRouteBuilder app, IndexerOptions options) => app.MapIndexEndpoints(options);
}
