using Magpie.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Net.Http.Headers;

namespace Magpie.Hosting;

/// <summary>
/// Every body Magpie takes is JSON, and says so: <c>application/json</c>, JSON Patch (<c>application/json-patch+json</c>) or
/// another <c>+json</c> type. Anything else answers 415. Besides catching a client that sends the wrong thing, this is what keeps
/// a web page from writing: a browser sends a cross-site form or <c>text/plain</c> POST without asking, but must ask (a CORS
/// preflight, which Magpie does not grant) before sending JSON.
/// </summary>
public static class JsonBodies
{
    public static void UseJsonBodiesOnly(this WebApplication app) => app.Use(async (ctx, next) =>
    {
        var request = ctx.Request;
        var hasBody = request.ContentLength > 0 || request.ContentLength is null && request.Headers.TransferEncoding.Count > 0;
        if (!hasBody || IsJson(request.ContentType))
        {
            await next(ctx);
            return;
        }
        await Problems.Create(StatusCodes.Status415UnsupportedMediaType, "Unsupported media type",
                $"{request.Method} {request.Path} takes JSON: send 'Content-Type: application/json'{(request.ContentType is { } t ? $", not '{t}'" : "")} (curl: --json, or -H 'Content-Type: application/json')")
            .ExecuteAsync(ctx);
    });

    private static bool IsJson(string? contentType) =>
        MediaTypeHeaderValue.TryParse(contentType, out var type) && type.MediaType.Value is { } media
        && (media.Equals("application/json", StringComparison.OrdinalIgnoreCase) || media.EndsWith("+json", StringComparison.OrdinalIgnoreCase));
}
