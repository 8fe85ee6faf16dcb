using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Embeddings.Connections;
using Magpie.Http;
using Magpie.Indexer.Definitions;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.Indexer.Http;

/// <summary>
/// <c>/embeddings/connections</c>: the providers <c>embedding.text(…, ai.task('name'))</c> embeds with, set at runtime and kept with
/// the index definitions. GET never shows a key.
/// </summary>
public static class EmbeddingConnectionEndpoints
{
    public static IEndpointRouteBuilder MapEmbeddingConnectionEndpoints(this IEndpointRouteBuilder app)
    {
        app.MapGet("/embeddings/connections", (IndexDefinitionStore store) =>
            Results.Json(store.Connections.All.ToDictionary(c => c.Key, c => c.Value.Masked()), IndexDefinitionStore.Json));
        app.MapGet("/embeddings/connections/{name}", (string name, IndexDefinitionStore store) =>
            store.Connections.All.TryGetValue(name, out var connection)
                ? Results.Json(connection.Masked(), IndexDefinitionStore.Json)
                : Problems.Of(404, $"there is no embedding connection '{name}'"));
        app.MapPut("/embeddings/connections/{name}", async (string name, HttpRequest request, IndexDefinitionStore store) =>
        {
            EmbeddingConnection? connection;
            try { connection = await JsonSerializer.DeserializeAsync<EmbeddingConnection>(request.Body, IndexDefinitionStore.Json, request.HttpContext.RequestAborted); }
            catch (JsonException e) { return Problems.Of(400, $"body is not an embedding connection: {e.Message}"); }
            if (connection is null) return Problems.Of(400, "body must be { \"type\": \"openai\", \"url\", \"model\", \"apiKey\" }");
            return await KeepAsync(() => store.PutConnectionAsync(name, connection, request.HttpContext.RequestAborted));
        });
        app.MapDelete("/embeddings/connections/{name}", (string name, IndexDefinitionStore store, CancellationToken ct) =>
            KeepAsync(() => store.PutConnectionAsync(name, null, ct)));
        return app;
    }

    private static async Task<IResult> KeepAsync(Func<Task> keep)
    {
        try { await keep(); }
        catch (IndexDefinitionException e) { return Problems.Of(e.Kind, e.Message); }
        catch (Confluent.Kafka.KafkaException e) { return Problems.Of(503, $"the connection could not be kept in magpie.indexes: {e.Error.Reason}"); }
        return Results.NoContent();
    }
}
