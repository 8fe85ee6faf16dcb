using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.Http;
using Magpie.Ingest.Documents;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;

namespace Magpie.Ingest.Http;

/// <summary>
/// <c>POST /message_writes</c>: what a sinks process (a queue sink in Kafka mode) writes, applied as <see cref="StoreMessageWriter"/>
/// applies it in process — each message all or nothing, at most once per ledger. Admin only (AccessRules): the service key sends it.
/// </summary>
public static class MessageWriteEndpoints
{
    public static IEndpointRouteBuilder MapMessageWriteEndpoints(this IEndpointRouteBuilder app, int maxJsonDepth)
    {
        app.MapPost("/message_writes", async (HttpContext ctx, IServiceProvider services) =>
        {
            var (body, problem) = await RequestBody.ReadAsync(ctx.Request, ctx.RequestAborted);
            if (problem is not null) return problem;
            (string Ledger, List<MessageWrites> Messages)? request;
            string? error;
            using (body)
            {
                try
                {
                    // +4: the request object, the messages array, a message and its writes array sit above each document.
                    using var doc = JsonDocument.Parse(body!.Memory, new JsonDocumentOptions { MaxDepth = maxJsonDepth + 4 });
                    request = MessageWritesJson.ReadRequest(doc.RootElement, out error);
                }
                catch (JsonException e) { (request, error) = (null, DocumentJson.MalformedReason(e)); }
            }
            if (request is not { } r) return Problems.BadRequest(error!);
            if (MessageLedgers.Problem(r.Ledger, "'ledger'") is { } ledgerProblem) return Problems.BadRequest(ledgerProblem);
            if (RoutedStore.Router(ctx) is { } router) return await PartitionedMessageWrites.RunAsync(ctx, router, r.Ledger, r.Messages);
            var outcomes = await services.GetRequiredService<IMessageWriter>().WriteAsync(r.Ledger, r.Messages, ctx.RequestAborted);
            return Results.Stream(async stream =>
            {
                await using var w = new Utf8JsonWriter(stream);
                MessageWritesJson.WriteResults(w, outcomes);
            }, "application/json");
        });
        return app;
    }
}
