using System.Text.Json;
using Magpie.Contracts;
using Magpie.Http;
using Magpie.Query.Operations;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.Query.Http;

/// <summary><c>/operations</c>: update and delete by query, run in the background; progress, results and cancellation by id.</summary>
public static class OperationEndpoints
{
    public static IEndpointRouteBuilder MapOperationEndpoints(this IEndpointRouteBuilder app)
    {
        app.MapPost("/operations/queries", async (HttpContext ctx, OperationRegistry operations) =>
        {
            OperationRequest? request;
            try { request = await JsonSerializer.DeserializeAsync<OperationRequest>(ctx.Request.Body, WireJson.Web, ctx.RequestAborted); }
            catch (JsonException e) { return Problems.Of(400, $"body is not an operation: {e.Message}"); }
            if (request is null || string.IsNullOrWhiteSpace(request.Query))
                return Problems.Of(400, "body needs \"query\": from … where … update { … } (or delete)");
            try
            {
                var status = operations.Start(request);
                return Results.Json(new { operationId = status.Id, status }, WireJson.Web, statusCode: StatusCodes.Status202Accepted);
            }
            catch (QueryProblem e) { return Problems.Of(e.Kind, e.Message, Problems.At(e.Line, e.Column)); }
        });
        app.MapGet("/operations", (OperationRegistry operations) => Results.Json(operations.All(), WireJson.Web));
        app.MapGet("/operations/{id}", (string id, OperationRegistry operations) =>
            operations.Get(id) is { } status ? Results.Json(status, WireJson.Web) : Problems.NotFound($"operation '{id}' does not exist (ended ones are kept for an hour)"));
        app.MapDelete("/operations/{id}", (string id, OperationRegistry operations) =>
            operations.Cancel(id) ? Results.NoContent() : Problems.NotFound($"operation '{id}' does not exist"));
        return app;
    }
}
