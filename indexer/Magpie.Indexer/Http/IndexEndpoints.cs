using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Definitions;
using Magpie.Indexer.Indexing;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.Indexer.Http;

/// <summary><c>/indexes</c>: define, inspect, reset and delete indexes at runtime. Names may contain '/', so routes take the rest of the path.</summary>
public static class IndexEndpoints
{
    public static IEndpointRouteBuilder MapIndexEndpoints(this IEndpointRouteBuilder app, IndexerOptions options)
    {
        app.MapGet("/indexes", (IndexDefinitionStore store, IndexRegistry registry) =>
            Results.Ok(store.Current.Select(d => Status(d.Key, d.Value, registry))));
        app.MapGet("/indexes/{**path}", (string path, IndexDefinitionStore store, IndexRegistry registry) =>
        {
            var (name, action) = Split(path);
            if (!store.Current.TryGetValue(name, out var definition)) return NotFound(name);
            return action switch
            {
                null => Results.Json(new { name, definition, status = Status(name, definition, registry) }, IndexDefinitionStore.Json),
                "stats" => Results.Json(Stats(name, registry), IndexDefinitionStore.Json),
                _ => NotFound(path),
            };
        });
        app.MapPut("/indexes/{**name}", async (string name, HttpRequest request, IndexDefinitionStore store) =>
        {
            IndexDefinition? definition;
            try { definition = await JsonSerializer.DeserializeAsync<IndexDefinition>(request.Body, IndexDefinitionStore.Json); }
            catch (JsonException e) { return Problem(400, $"body is not an index definition: {e.Message}"); }
            if (definition is null) return Problem(400, "body must be { \"maps\": [...], \"fields\": {...} }");
            try { store.Put(name, definition, options.ScriptLimits); }
            catch (IndexDefinitionException e) { return Problem(e); }
            return Results.NoContent();
        });
        app.MapDelete("/indexes/{**name}", (string name, IndexDefinitionStore store) =>
        {
            try { store.Delete(name); }
            catch (IndexDefinitionException e) { return Problem(e); }
            return Results.NoContent();
        });
        app.MapPost("/indexes/{**path}", async (string path, IndexDefinitionStore store, IndexRegistry registry) =>
        {
            var (name, action) = Split(path);
            if (action != "reset") return Problem(404, $"POST /indexes/{{name}}/reset is the only POST here");
            if (!store.Current.ContainsKey(name)) return NotFound(name);
            await registry.ResetAsync(name);
            return Results.NoContent();
        });
        return app;
    }

    private static (string Name, string? Action) Split(string path)
    {
        foreach (var action in new[] { "stats", "reset" })
            if (path.EndsWith("/" + action, StringComparison.Ordinal)) return (path[..^(action.Length + 1)], action);
        return (path, null);
    }

    /// <summary>What an index has done: etags, staleness, entries, errors.</summary>
    public static object Status(string name, IndexDefinition definition, IndexRegistry registry)
    {
        var worker = registry.Worker(name);
        var s = worker?.Status.Snapshot();
        var backlog = worker?.Backlog();
        return new
        {
            name,
            state = worker is null ? "not running" : s!.Failure is null ? "running" : "error",
            indexedEtag = s?.IndexedEtag ?? 0,
            lastDocumentEtag = worker?.LastDocumentEtag(),
            isStale = worker is null || backlog is not 0,
            entries = s?.Entries ?? 0,
            errorCount = s?.ErrorCount ?? 0,
            errors = s?.Errors ?? [],
            failure = s?.Failure ?? registry.HostFailure,
        };
    }

    private static object Stats(string name, IndexRegistry registry)
    {
        var s = registry.Worker(name)?.Status.Snapshot();
        return new
        {
            name,
            batches = s?.Batches ?? 0,
            documentsIndexed = s?.DocumentsIndexed ?? 0,
            entries = s?.Entries ?? 0,
            errorCount = s?.ErrorCount ?? 0,
            recentBatches = s?.RecentBatches ?? [],
            errors = s?.Errors ?? [],
        };
    }

    private static IResult NotFound(string name) => Problem(404, $"index '{name}' does not exist");

    private static IResult Problem(int status, string detail) =>
        Results.Problem(detail: detail, statusCode: status, title: status == 404 ? "Not found" : "Bad request");

    private static IResult Problem(IndexDefinitionException e) => Results.Problem(detail: e.Message, statusCode: e.Status,
        title: e.Status == 404 ? "Not found" : "Bad request",
        extensions: e.Script is { } s ? new Dictionary<string, object?> { ["line"] = s.Line, ["column"] = s.Column } : null);
}
