using Magpie.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace Magpie.Hosting;

/// <summary>
/// A web page must not write to Magpie: a browser sends a cross-origin POST with <c>Content-Type: text/plain</c> without
/// asking first (no CORS preflight), so any page a user opens could delete documents. Requests that change something
/// (not GET, HEAD or OPTIONS) and carry an <c>Origin</c> other than Magpie's own, or one listed in
/// <c>Magpie:AllowedOrigins</c>, are refused with 403. Clients that are not browsers send no Origin and are not affected.
/// </summary>
public static class CrossOriginWrites
{
    public static void UseCrossOriginWriteRefusal(this WebApplication app, IReadOnlyCollection<string> allowedOrigins)
    {
        var allowed = allowedOrigins.Select(o => o.TrimEnd('/')).ToHashSet(StringComparer.OrdinalIgnoreCase);
        app.Use(async (ctx, next) =>
        {
            var request = ctx.Request;
            if (HttpMethods.IsGet(request.Method) || HttpMethods.IsHead(request.Method) || HttpMethods.IsOptions(request.Method)
                || request.Headers.Origin is not { Count: > 0 } origin || IsAllowed(origin.ToString(), request, allowed))
            {
                await next(ctx);
                return;
            }
            await Problems.Create(StatusCodes.Status403Forbidden, "Cross-origin write refused",
                $"a {request.Method} from the web origin {origin} is refused: add it to Magpie:AllowedOrigins to let that site write").ExecuteAsync(ctx);
        });
    }

    private static bool IsAllowed(string origin, HttpRequest request, HashSet<string> allowed) =>
        allowed.Contains(origin.TrimEnd('/'))
        || Uri.TryCreate(origin, UriKind.Absolute, out var uri) && string.Equals(uri.Authority, request.Host.Value, StringComparison.OrdinalIgnoreCase)
            && string.Equals(uri.Scheme, request.Scheme, StringComparison.OrdinalIgnoreCase);
}
