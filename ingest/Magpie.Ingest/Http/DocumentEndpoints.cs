using Magpie.Http;
using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.Ingest.Documents;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.Primitives;

namespace Magpie.Ingest.Http;

/// <summary>The document write/read API: <c>/docs</c>, <c>/bulk_docs</c>, <c>/stats</c>.</summary>
public static class DocumentEndpoints
{
    public const int MaxPageSize = 1024;

    public static IEndpointRouteBuilder MapDocumentEndpoints(this IEndpointRouteBuilder app, int maxJsonDepth = DocumentJson.DefaultMaxDepth)
    {
        // A partitioned store: every /docs request goes to the partition of its id (RoutedStore), here or at its owner.
        var docs = app.MapGroup("/docs").AddEndpointFilter(RoutedStore.RouteAsync);
        // RavenDB's form, /docs?id=…, takes any id, even one a path would normalise ('..', '.') or split: Studio uses it.
        docs.MapGet("/", (HttpContext ctx, string? id, bool? revisions, string? collection, int? start, int? pageSize, string? cursor, int? partition) =>
            id is null ? Browse(ctx, collection, start, pageSize, cursor, partition)
            : revisions == true ? Revisions(id, ctx, RoutedStore.Of(ctx), pageSize) : Get(id, ctx, pageSize));
        docs.MapMethods("/", [HttpMethods.Head], (string id, HttpContext ctx) => Head(id, ctx, RoutedStore.Of(ctx)));
        docs.MapPut("/", (string id, HttpContext ctx) => Put(id, ctx));
        docs.MapPatch("/", (string id, HttpContext ctx) => Patch(id, ctx, maxJsonDepth));
        docs.MapDelete("/", (string id, HttpContext ctx) => Delete(id, ctx));
        docs.MapGet("/{**id}", (string id, HttpContext ctx, int? pageSize) => Get(id, ctx, pageSize));
        docs.MapMethods("/{**id}", [HttpMethods.Head], (string id, HttpContext ctx) => Head(id, ctx, RoutedStore.Of(ctx)));
        docs.MapPut("/{**id}", (string id, HttpContext ctx) => Put(id, ctx));
        docs.MapPatch("/{**id}", (string id, HttpContext ctx) => Patch(id, ctx, maxJsonDepth));
        docs.MapDelete("/{**id}", (string id, HttpContext ctx) => Delete(id, ctx));
        app.MapPost("/bulk_docs", (Delegate)((HttpContext ctx) => RoutedStore.Router(ctx) is { } router ? PartitionedBulk.RunAsync(ctx, router, maxJsonDepth) : Bulk(ctx, RoutedStore.Of(ctx), maxJsonDepth)));
        app.MapGet("/stats", (HttpContext ctx, bool? local) => RoutedStore.Router(ctx) is { } router
            ? PartitionedStats.GetAsync(ctx, router, local == true)
            : Task.FromResult(Results.Ok(RoutedStore.Of(ctx).Stats())));
        return app;
    }

    private static async Task<IResult> Get(string id, HttpContext ctx, int? pageSize)
    {
        if (DocumentId.Validate(id) is { } idError) return Problems.BadRequest(idError);
        var store = RoutedStore.Of(ctx);
        var doc = await store.GetAsync(id, ctx.RequestAborted);
        // Ids may contain '/', so "{id}/revisions" is the revisions of {id} unless a document has that very id.
        if (doc is null && id.EndsWith(RevisionsSuffix, StringComparison.Ordinal) && id.Length > RevisionsSuffix.Length)
        {
            var of = id[..^RevisionsSuffix.Length];
            // A partitioned store keeps {id} where its own partition is: asked there in the form that names the id.
            if (RoutedStore.Router(ctx) is { } router && router.Partitions.PartitionOf(of) != router.Partitions.PartitionOf(id))
                return (IResult)(await RoutedStore.ServeAsync(ctx, router, of, async () => await Revisions(of, ctx, RoutedStore.Of(ctx), pageSize),
                    $"/docs?id={Uri.EscapeDataString(of)}&revisions=true{(pageSize is { } size ? $"&pageSize={size}" : "")}"))!;
            return await Revisions(of, ctx, store, pageSize);
        }
        if (doc is null) return Problems.NotFound($"document '{id}' does not exist");
        ctx.Response.Headers.ETag = Etag.ToHeader(doc.Etag);
        if (Matches(ctx.Request.Headers.IfNoneMatch, doc.Etag)) return Results.StatusCode(StatusCodes.Status304NotModified);
        return new DocumentResult(doc);
    }

    private const string RevisionsSuffix = "/revisions";

    /// <summary>
    /// <c>GET /docs/{id}/revisions</c>: the versions of a document the change log still holds, newest first, each with its
    /// etag and time — after compaction as many as <c>Magpie:Compaction:Revisions</c> keeps; 404 when it does not exist.
    /// </summary>
    private static async Task<IResult> Revisions(string id, HttpContext ctx, DocumentStore store, int? pageSize)
    {
        var size = pageSize ?? 25;
        if (size is < 1 or > MaxPageSize) return Problems.BadRequest($"pageSize must be between 1 and {MaxPageSize}");
        var versions = await store.RevisionsAsync(id, size, ctx.RequestAborted);
        if (versions.Count == 0) return Problems.NotFound($"document '{id}' does not exist");
        return new BrowseResult(new BrowsePage(versions, null));
    }

    /// <summary>Does the document exist, and at which etag (RavenDB clients test existence this way): 200 with ETag, 304, 404; no body.</summary>
    private static async Task<IResult> Head(string id, HttpContext ctx, DocumentStore store)
    {
        if (DocumentId.Validate(id) is { } idError) return Results.StatusCode(StatusCodes.Status400BadRequest);
        if (await store.EtagOfAsync(id, ctx.RequestAborted) is not { } etag) return Results.StatusCode(StatusCodes.Status404NotFound);
        ctx.Response.Headers.ETag = Etag.ToHeader(etag);
        return Results.StatusCode(Matches(ctx.Request.Headers.IfNoneMatch, etag) ? StatusCodes.Status304NotModified : StatusCodes.Status200OK);
    }

    private static async Task<IResult> Browse(HttpContext ctx, string? collection, int? start, int? pageSize, string? cursor, int? partition)
    {
        var size = pageSize ?? 25;
        if (size is < 1 or > MaxPageSize) return Problems.BadRequest($"pageSize must be between 1 and {MaxPageSize}");
        if (start is < 0) return Problems.BadRequest("start must not be negative");
        if (RoutedStore.Router(ctx) is { } router) return await PartitionedBrowse.PageAsync(ctx, router, collection, start ?? 0, size, cursor, partition);
        return await BrowseAsync(ctx, RoutedStore.Of(ctx), collection, start ?? 0, size, cursor);
    }

    /// <summary>A page of one store's latest versions in log order, after a cursor (a log address).</summary>
    internal static async Task<IResult> BrowseAsync(HttpContext ctx, DocumentStore store, string? collection, int start, int size, string? cursor)
    {
        long from = 0;
        if (cursor is not null && (!long.TryParse(cursor, out from) || from < 0)) return Problems.BadRequest("cursor is not one this server returned");
        var page = await store.BrowseAsync(string.IsNullOrEmpty(collection) ? null : collection, start, size, from, ctx.RequestAborted);
        return new BrowseResult(page);
    }

    private static async Task<IResult> Put(string id, HttpContext ctx)
    {
        if (DocumentId.Validate(id) is { } idError) return Problems.BadRequest(idError);
        if (!TryIfMatch(ctx, out var ifMatch, out var bad)) return bad!;
        var (body, problem) = await RequestBody.ReadAsync(ctx.Request, ctx.RequestAborted);
        if (problem is not null) return problem;
        using (body)
        {
            // The store checks the body (object, depth, text) as it checks every write path's result: 400 from there.
            return await WriteOne(ctx, WriteCommand.Put(id, body!.Span.ToArray(), ifMatch));
        }
    }

    private static async Task<IResult> Patch(string id, HttpContext ctx, int maxDepth)
    {
        if (DocumentId.Validate(id) is { } idError) return Problems.BadRequest(idError);
        if (!TryIfMatch(ctx, out var ifMatch, out var bad)) return bad!;
        var (body, problem) = await RequestBody.ReadAsync(ctx.Request, ctx.RequestAborted);
        if (problem is not null) return problem;
        Microsoft.AspNetCore.JsonPatch.SystemTextJson.JsonPatchDocument? patch;
        string? patchError;
        using (body) patch = DocumentPatcher.Parse(body!.Span, out patchError, maxDepth);
        if (patch is null) return Problems.BadRequest(patchError!);
        return await WriteOne(ctx, WriteCommand.ApplyPatch(id, patch, ifMatch));
    }

    private static async Task<IResult> Delete(string id, HttpContext ctx)
    {
        if (DocumentId.Validate(id) is { } idError) return Problems.BadRequest(idError);
        if (!TryIfMatch(ctx, out var ifMatch, out var bad)) return bad!;
        try
        {
            // A delete is a write like any other: its etag is what a reader of the change feed will see.
            if ((await RoutedStore.Of(ctx).WriteAsync([WriteCommand.Delete(id, ifMatch)], atomic: true))[0].Etag is { } etag)
            {
                ctx.Response.Headers.ETag = Etag.ToHeader(etag);
                await RoutedStore.AcknowledgeAsync(ctx, etag);
                await IndexWait.AfterWriteAsync(ctx, etag);
            }
            return Results.NoContent();
        }
        catch (WriteRejectedException e) { return WriteProblems.Rejected(e.Outcome.Error!); }
    }

    private static async Task<IResult> WriteOne(HttpContext ctx, WriteCommand command)
    {
        try
        {
            var outcome = (await RoutedStore.Of(ctx).WriteAsync([command], atomic: true))[0];
            ctx.Response.Headers.ETag = Etag.ToHeader(outcome.Etag!.Value);
            await RoutedStore.AcknowledgeAsync(ctx, outcome.Etag);
            await IndexWait.AfterWriteAsync(ctx, outcome.Etag);
            var body = new { id = outcome.Id, etag = outcome.Etag };
            return outcome.Created ? Results.Created($"/docs/{DocumentId.UrlPath(outcome.Id)}", body) : Results.Ok(body);
        }
        catch (WriteRejectedException e) { return WriteProblems.Rejected(e.Outcome.Error!); }
    }

    private static async Task<IResult> Bulk(HttpContext ctx, DocumentStore store, int maxDepth)
    {
        var (body, problem) = await RequestBody.ReadAsync(ctx.Request, ctx.RequestAborted);
        if (problem is not null) return problem;
        IReadOnlyList<WriteCommand> commands;
        string? error;
        using (body) commands = BulkCommandParser.Parse(body!.Memory, maxDepth, out error);
        if (error is not null) return Problems.BadRequest(error);
        return await BulkWriteAsync(ctx, store, commands);
    }

    /// <summary>A bulk request's commands applied all or nothing to one store: every etag, or the first refusal naming its command.</summary>
    internal static async Task<IResult> BulkWriteAsync(HttpContext ctx, DocumentStore store, IReadOnlyList<WriteCommand> commands)
    {
        try
        {
            var outcomes = await store.WriteAsync(commands, atomic: true);
            await RoutedStore.AcknowledgeAsync(ctx, outcomes.Max(o => o.Etag));
            await IndexWait.AfterWriteAsync(ctx, outcomes.Max(o => o.Etag));
            return Results.Ok(new
            {
                results = outcomes.Select(o => new { id = o.Id, method = o.Method.ToString().ToUpperInvariant(), etag = o.Etag }),
            });
        }
        catch (WriteRejectedException e)
        {
            return WriteProblems.Rejected(e.Outcome.Error!, new Dictionary<string, object?> { ["index"] = e.Index, ["id"] = e.Outcome.Id });
        }
    }

    private static bool TryIfMatch(HttpContext ctx, out long? etag, out IResult? problem)
    {
        etag = null;
        problem = null;
        var header = ctx.Request.Headers.IfMatch;
        if (StringValues.IsNullOrEmpty(header)) return true;
        if (Etag.TryParse(header.ToString(), out var e)) { etag = e; return true; }
        problem = Problems.BadRequest($"If-Match must be an etag this server returned (e.g. \"42\"), not '{header}'");
        return false;
    }

    private static bool Matches(StringValues ifNoneMatch, long etag)
    {
        foreach (var value in ifNoneMatch)
            foreach (var part in (value ?? "").Split(','))
                if (part.Trim() == "*" || (Etag.TryParse(part, out var e) && e == etag)) return true;
        return false;
    }

    /// <summary>Writes a document with its metadata straight to the response, no intermediate string.</summary>
    private sealed class DocumentResult(StoredDocument doc) : IResult
    {
        public async Task ExecuteAsync(HttpContext ctx)
        {
            ctx.Response.ContentType = "application/json; charset=utf-8";
            ctx.Response.Headers.LastModified = doc.LastModified.ToString("R");
            await using var w = new Utf8JsonWriter(ctx.Response.Body);
            DocumentJson.WriteWithMetadata(w, doc);
        }
    }

    private sealed class BrowseResult(BrowsePage page) : IResult
    {
        public async Task ExecuteAsync(HttpContext ctx)
        {
            ctx.Response.ContentType = "application/json; charset=utf-8";
            await using var w = new Utf8JsonWriter(ctx.Response.Body);
            w.WriteStartObject();
            w.WriteStartArray("results");
            foreach (var doc in page.Results) DocumentJson.WriteWithMetadata(w, doc);
            w.WriteEndArray();
            if (page.NextCursor is { } next) w.WriteString("nextCursor", next.ToString());
            else w.WriteNull("nextCursor");
            w.WriteEndObject();
        }
    }
}
