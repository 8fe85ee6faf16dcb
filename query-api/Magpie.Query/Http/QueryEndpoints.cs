using System.Diagnostics;
using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.Indexer.Definitions;
using Magpie.Indexer.Indexing;
using Magpie.Indexer.Lucene;
using Magpie.Indexer.Maps;
using Magpie.Query.Rql;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;

namespace Magpie.Query.Http;

/// <summary>
/// POST /queries: one page of an RQL query over an index; POST /streams/queries: all results as NDJSON,
/// page after page by cursor, flushed as they go.
/// </summary>
public static class QueryEndpoints
{
    private const int MaxPageSize = 1024;
    private const int StreamPage = 1000;
    private static readonly ReadOnlyMemory<byte> NewLine = "\n"u8.ToArray();

    public static IEndpointRouteBuilder MapQueryEndpoints(this IEndpointRouteBuilder app)
    {
        app.MapPost("/queries", async (HttpContext ctx, IndexDefinitionStore definitions, IndexRegistry registry) =>
        {
            var documents = ctx.RequestServices.GetService<IDocumentLookup>();
            var started = Stopwatch.GetTimestamp();
            var (plan, problem) = await PrepareAsync(ctx, definitions, registry);
            if (problem is not null) return problem;
            var (request, query, worker, definition, isStale) = plan!;
            if (request.PageSize is < 1 or > MaxPageSize) return Problem(400, $"pageSize must be 1 to {MaxPageSize}");
            SearchCursor? after = null;
            if (request.Cursor is { } c && (after = SearchCursor.Parse(c)) is null) return Problem(400, "cursor is not one this server gave out");
            SearchPage page;
            try { page = await QueryRunner.RunAsync(worker.Index!, definition, query, request.Parameters, request.PageSize, request.Start, after, ctx.RequestAborted); }
            catch (RqlException e) { return Problem(400, e.Message, e.Line, e.Column); }
            catch (LuceneException e) { return Problem(400, $"the index refused the query: {e.Message}"); }
            var results = new List<JsonElement>(page.Hits.Count);
            foreach (var hit in page.Hits)
                if (await ResultOf(hit, query, documents, ctx.RequestAborted) is { } r) results.Add(r);
            var pageSize = query.Limit ?? request.PageSize;
            return Results.Json(new
            {
                results,
                totalResults = page.TotalHits,
                isStale,
                indexEtag = worker.Status.IndexedEtag,
                durationMs = Math.Round(Stopwatch.GetElapsedTime(started).TotalMilliseconds, 2),
                nextCursor = page.Hits.Count == pageSize ? page.Hits[^1].Cursor.ToString() : null,
            });
        });

        app.MapPost("/streams/queries", async (HttpContext ctx, IndexDefinitionStore definitions, IndexRegistry registry) =>
        {
            var documents = ctx.RequestServices.GetService<IDocumentLookup>();
            var (plan, problem) = await PrepareAsync(ctx, definitions, registry);
            if (problem is not null) { await problem.ExecuteAsync(ctx); return; }
            var (request, query, worker, definition, _) = plan!;
            PreparedQuery prepared;
            try { prepared = await QueryRunner.PrepareAsync(worker.Index!, definition, query, request.Parameters, ctx.RequestAborted); }
            catch (RqlException e) { await Problem(400, e.Message, e.Line, e.Column).ExecuteAsync(ctx); return; }
            // A slow reader that keeps reading is not an error: no minimum send rate for this response.
            if (ctx.Features.Get<IHttpMinResponseDataRateFeature>() is { } rate) rate.MinDataRate = null;
            ctx.Response.ContentType = "application/x-ndjson";
            SearchCursor? after = null;
            var remaining = query.Limit ?? long.MaxValue;
            var skip = query.Offset ?? request.Start;
            while (remaining > 0 && !ctx.RequestAborted.IsCancellationRequested)
            {
                var page = await prepared.PageAsync((int)Math.Min(StreamPage, remaining), after is null ? skip : 0, after, ctx.RequestAborted);
                foreach (var hit in page.Hits)
                {
                    if (await ResultOf(hit, query, documents, ctx.RequestAborted) is not { } r) continue;
                    await JsonSerializer.SerializeAsync(ctx.Response.Body, r, cancellationToken: ctx.RequestAborted);
                    await ctx.Response.Body.WriteAsync(NewLine, ctx.RequestAborted);
                }
                await ctx.Response.Body.FlushAsync(ctx.RequestAborted);
                remaining -= page.Hits.Count;
                if (page.Hits.Count < StreamPage) break;
                after = page.Hits[^1].Cursor;
            }
        });
        return app;
    }

    private sealed record Plan(QueryRequest Request, RqlQuery Query, IndexWorker Worker, Contracts.Indexes.IndexDefinition Definition, bool IsStale);

    /// <summary>Body, RQL, index, and (when asked) the wait for non-stale results; or the problem that stops the query.</summary>
    private static async Task<(Plan?, IResult?)> PrepareAsync(HttpContext ctx, IndexDefinitionStore definitions, IndexRegistry registry)
    {
        QueryRequest? request;
        try { request = await JsonSerializer.DeserializeAsync<QueryRequest>(ctx.Request.Body, JsonSerializerOptions.Web, ctx.RequestAborted); }
        catch (JsonException e) { return (null, Problem(400, $"body is not a query request: {e.Message}")); }
        if (request is null || string.IsNullOrWhiteSpace(request.Query)) return (null, Problem(400, "body needs \"query\": an RQL query"));
        RqlQuery query;
        try { query = RqlParser.Parse(request.Query); }
        catch (RqlException e) { return (null, Problem(400, e.Message, e.Line, e.Column)); }
        if (!query.From.IsIndex)
            return (null, Problem(400, $"'from {query.From.Name}' needs an index in this version: PUT /indexes/{{name}} with a map over {query.From.Name}, then 'from index '{{name}}''"));
        if (!definitions.Current.TryGetValue(query.From.Name, out var definition)) return (null, Problem(404, $"index '{query.From.Name}' does not exist"));
        if (registry.Worker(query.From.Name) is not { } worker)
            return (null, Problem(503, $"index '{query.From.Name}' is not running: {registry.HostFailure ?? "starting"}"));
        var timeout = TimeSpan.FromMilliseconds(Math.Clamp(request.TimeoutMs, 0, 300_000));
        var deadline = DateTime.UtcNow + timeout;
        while (worker.Index is null && DateTime.UtcNow < deadline) await Task.Delay(20, ctx.RequestAborted);
        if (worker.Index is null) return (null, Problem(503, $"index '{query.From.Name}' is still opening"));
        var isStale = worker.Backlog() is not 0;
        if (isStale && request.WaitForNonStaleResults && worker.LastDocumentEtag() is { } last)
            isStale = !await worker.WaitForEtagAsync(last, deadline - DateTime.UtcNow, ctx.RequestAborted);
        return (new Plan(request, query, worker, definition, isStale), null);
    }

    /// <summary>The document (as GET /docs returns it), or with select: the projected fields, from stored values or else the document.</summary>
    private static async Task<JsonElement?> ResultOf(SearchHit hit, RqlQuery query, IDocumentLookup? documents, CancellationToken ct)
    {
        JsonElement? document = null;
        async Task<JsonElement?> Document() => document ??= documents is null ? null : await documents.GetAsync(hit.Id, ct);
        if (query.Select.Count == 0) return await Document();
        var projection = new Dictionary<string, JsonElement?>();
        foreach (var p in query.Select)
        {
            if (hit.Stored.TryGetValue(p.Field + EntryFields.Stored, out var stored) && stored.Count > 0)
                projection[p.Alias] = JsonDocument.Parse((string)stored[0]).RootElement;
            else if (await Document() is { } d && d.TryGetProperty(p.Field, out var value))
                projection[p.Alias] = value;
            else projection[p.Alias] = null;
        }
        return JsonSerializer.SerializeToElement(projection);
    }

    private static IResult Problem(int status, string detail, int? line = null, int? column = null) =>
        Results.Problem(detail: detail, statusCode: status, title: status switch { 404 => "Not found", 503 => "Unavailable", _ => "Bad request" },
            extensions: line is null ? null : new Dictionary<string, object?> { ["line"] = line, ["column"] = column });
}
