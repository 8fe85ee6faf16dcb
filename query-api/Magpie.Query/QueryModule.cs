using Magpie.Query.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.Query;

/// <summary>The query target's HTTP side. Reads the indexes of the indexer in the same process (embedded).</summary>
public static class QueryModule
{
    public static IEndpointRouteBuilder MapQueries(this IEndpointRouteBuilder app) => app.MapQueryEndpoints();
}
