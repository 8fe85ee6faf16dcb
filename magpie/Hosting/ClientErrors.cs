using Magpie.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Diagnostics;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.Hosting;

/// <summary>
/// Errors the framework answers before a handler runs get the same RFC 7807 bodies as Magpie's own: a parameter that
/// does not bind (<c>pageSize=abc</c>), a body shorter than its Content-Length or a broken chunk (Kestrel's
/// <see cref="BadHttpRequestException"/>), no such route (404), a method the route lacks (405). Client mistakes are
/// 4xx with a detail that names them, never 500; a module's own status exceptions (a full disk: 507) answer with their status and message.
/// </summary>
public static class ClientErrors
{
    public static void AddClientErrors(this IServiceCollection services)
    {
        services.AddProblemDetails(o => o.CustomizeProblemDetails = Describe);
        // Binding failures throw instead of answering an empty 400, so the exception handler writes the problem body with their reason.
        services.Configure<RouteHandlerOptions>(o => o.ThrowOnBadRequest = true);
    }

    public static void UseClientErrors(this WebApplication app)
    {
        app.UseExceptionHandler(new ExceptionHandlerOptions
        {
            StatusCodeSelector = e => e switch
            {
                BadHttpRequestException bad => bad.StatusCode,
                _ when ClientBodies.IsBrokenChunk(e) => StatusCodes.Status400BadRequest,
                IStatusException status => status.StatusCode,
                _ => StatusCodes.Status500InternalServerError,
            },
            // A client's mistake is answered, not logged as a server failure with a stack trace.
            SuppressDiagnosticsCallback = c => c.Exception is BadHttpRequestException or IStatusException || ClientBodies.IsBrokenChunk(c.Exception),
        });
        app.UseStatusCodePages();
    }

    private static void Describe(ProblemDetailsContext context)
    {
        var problem = context.ProblemDetails;
        var request = context.HttpContext.Request;
        if (context.Exception is BadHttpRequestException or IStatusException) problem.Detail ??= context.Exception.Message;
        if (context.Exception is { } e && ClientBodies.IsBrokenChunk(e)) problem.Detail ??= $"the chunked request body is malformed: {e.Message}";
        problem.Detail ??= problem.Status switch
        {
            StatusCodes.Status404NotFound => $"no resource at {request.Method} {request.Path}",
            StatusCodes.Status405MethodNotAllowed => $"{request.Method} is not allowed on {request.Path}" +
                (context.HttpContext.Response.Headers.Allow is { Count: > 0 } allow ? $" (allowed: {allow})" : ""),
            _ => null,
        };
    }
}
