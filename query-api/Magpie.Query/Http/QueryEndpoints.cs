using Magpie.Http;
using System.Diagnostics;
using System.Text.Json;
using Magpie.Contracts;
using Magpie.Query.Facets;
using Magpie.Query.Projections;
using Magpie.Query.Rql;
using Magpie.Query.Shards;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Json;
using Microsoft.AspNetCore.Routing;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace Magpie.Query.Http;

/// <summary>
/// POST /queries: one page of an RQL query over an index; POST /streams/queries: all results as NDJSON,
/// page after page by cursor from one snapshot of the index, flushed as they go. Both run through the <see cref="QueryCoordinator"/>
/// (embedded: the indexer in this process; Kafka mode: the indexer processes holding the shards).
/// </summary>
public static class QueryEndpoints
{
    private const int MaxPageSize = 1024;

    /// <summary>The deepest page an offset may reach (Elasticsearch's <c>max_result_window</c> idea): the engine keeps start + pageSize hits in memory; deeper pages go by cursor.</summary>
    private const int MaxOffsetWindow = 1_000_000;

    /// <summary>Paging the engine must never see: checked before the query runs.</summary>
    private static QueryProblem? PagingProblem(int pageSize, int start, bool fromRql)
    {
        var name = fromRql ? "limit" : "pageSize";
        if (pageSize is < 0 or > MaxPageSize) return new QueryProblem(ErrorKind.Invalid, $"{name} must be 0 (the count only) to {MaxPageSize}");
        if (start < 0) return new QueryProblem(ErrorKind.Invalid, $"{(fromRql ? "offset" : "start")} must be 0 or more, not {start}");
        if ((long)start + pageSize > MaxOffsetWindow)
            return new QueryProblem(ErrorKind.Invalid, $"start + pageSize may reach {MaxOffsetWindow:N0} at most (asked {(long)start + pageSize:N0}); page deeper with the cursor (nextCursor)");
        return null;
    }
    private static readonly ReadOnlyMemory<byte> NewLine = "\n"u8.ToArray();

    public static IEndpointRouteBuilder MapQueryEndpoints(this IEndpointRouteBuilder app)
    {
        app.MapPost("/queries", async (HttpContext ctx, QueryCoordinator coordinator) =>
        {
            var started = Stopwatch.GetTimestamp();
            var kind = "page";
            var failed = true;
            try
            {
                var (request, query) = await ReadAsync(ctx);
                var parsed = Stopwatch.GetElapsedTime(started).TotalMilliseconds;
                if (query.FacetsOnly) kind = "facets";
                var pageSize = query.Limit ?? request.PageSize;
                var start = query.Offset ?? request.Start;
                if (PagingProblem(pageSize, start, query.Limit is not null) is { } paging) return Problem(paging);
                if (query.Distinct)
                {
                    var (total, kept, stale, etag) = await DistinctPageAsync(coordinator, request, query, start, pageSize, ctx.RequestAborted);
                    failed = false;
                    return Results.Json(new { results = kept, totalResults = total, isStale = stale, indexEtag = etag,
                        durationMs = Math.Round(Stopwatch.GetElapsedTime(started).TotalMilliseconds, 2) });
                }
                // pageSize 0 asks how many: the engine finds one hit for the total, and none is returned.
                var page = await coordinator.PageAsync(request.ToCoordinator(), query, Math.Max(1, pageSize), start, request.Cursor,
                    request.WaitForNonStaleResults, ctx.RequestAborted);
                if (pageSize == 0) page = page with { Hits = [] };
                failed = false;
                // Kafka mode: how far the ingest has applied each input partition, as this process knows (a producer compares its offsets).
                if (ctx.RequestServices.GetService<InputOffsets>() is { } input)
                    ctx.Response.Headers["Magpie-Input-Offsets"] = JsonSerializer.Serialize(input.Applied);
                // RavenDB's shape: one result per suggest(), { Name: { Name, Suggestions } }.
                if (page.Suggestions is { } suggested)
                    return Results.Json(new
                    {
                        results = suggested.Select(s => new Dictionary<string, object>
                        {
                            [s.Name] = new Dictionary<string, object> { ["Name"] = s.Name, ["Suggestions"] = s.Suggestions() },
                        }),
                        totalResults = suggested.Count, isStale = page.IsStale, indexEtag = page.IndexEtag,
                        durationMs = Math.Round(Stopwatch.GetElapsedTime(started).TotalMilliseconds, 2),
                    });
                return Results.Json(new
                {
                    results = page.Hits.Select(h => h.Result),
                    facets = page.Facets is { } f ? FacetResults.Shape(query.Facets, f) : null,
                    totalResults = page.TotalResults,
                    isStale = page.IsStale,
                    indexEtag = page.IndexEtag,
                    durationMs = Math.Round(Stopwatch.GetElapsedTime(started).TotalMilliseconds, 2),
                    nextCursor = !query.FacetsOnly && pageSize > 0 && page.Hits.Count == pageSize ? page.Hits[^1].Cursor : null,
                    includes = page.Included,
                    // Which path served the results: the values the index stores, or the documents.
                    resultsFrom = page.Hits.Count == 0 ? null : page.DocumentsRead == 0 ? "index" : "documents",
                    timings = query.Timings ? Timings(page, parsed, started) : null,
                    explanations = query.Explanations ? page.Hits.Where(h => h.Id is not null).GroupBy(h => h.Id!).ToDictionary(g => g.Key, g => g.Select(h => h.Explanation)) : null,
                    highlightings = query.Highlights.Count > 0 ? Highlightings(page.Hits) : null,
                });
            }
            catch (QueryProblem e) { return Problem(e); }
            finally { QueryMetrics.Queried(kind, started, failed); }
        });

        app.MapPost("/streams/queries", async (HttpContext ctx, QueryCoordinator coordinator) =>
        {
            var started = Stopwatch.GetTimestamp();
            QueryStream stream;
            QueryRequest request;
            RqlQuery query;
            try
            {
                (request, query) = await ReadAsync(ctx);
                stream = query.Distinct ? await DistinctStreamAsync(coordinator, request, query, ctx.RequestAborted)
                    : await coordinator.StreamAsync(request.ToCoordinator(), query, ctx.RequestAborted);
            }
            catch (QueryProblem e) { await Problem(e).ExecuteAsync(ctx); return; }
            // The snapshots go when the stream ends, fails, or its client goes away (the aborted write throws).
            await using var _ = stream;
            // A slow reader that keeps reading is not an error: no minimum send rate for this response.
            if (ctx.Features.Get<IHttpMinResponseDataRateFeature>() is { } rate) rate.MinDataRate = null;
            ctx.Response.ContentType = "application/x-ndjson";
            // RavenDB's stream headers: whether the rows come from an index still catching up (ask waitForNonStaleResults to wait).
            ctx.Response.Headers["Magpie-Is-Stale"] = stream.IsStale ? "true" : "false";
            ctx.Response.Headers["Magpie-Results-From"] = stream.FromIndex ? "index" : "documents";
            ctx.Response.Headers["Magpie-Index-Etag"] = stream.IndexEtag.ToString(System.Globalization.CultureInfo.InvariantCulture);
            // The same JSON settings as POST /queries, so a streamed result reads exactly like a paged one.
            var json = ctx.RequestServices.GetRequiredService<IOptions<JsonOptions>>().Value.SerializerOptions;
            long bytes = 0;
            var failed = true;
            try
            {
                // Headers are gone after the first page: a shard failing later can only end the stream early (the client sees it cut short).
                // Included documents follow the page that refers to them, each once in the stream, as {"@include": document}.
                var sent = new HashSet<string>(StringComparer.Ordinal);
                async Task WriteLineAsync(object value)
                {
                    var line = JsonSerializer.SerializeToUtf8Bytes(value, json);
                    await ctx.Response.Body.WriteAsync(line, ctx.RequestAborted);
                    await ctx.Response.Body.WriteAsync(NewLine, ctx.RequestAborted);
                    bytes += line.Length + 1;
                }
                var distinct = query.Distinct ? new DistinctResults() : null;
                // Distinct: offset and limit count distinct results.
                var skip = query.Distinct ? query.Offset ?? request.Start : 0;
                var remaining = query.Distinct ? query.Limit ?? long.MaxValue : long.MaxValue;
                await foreach (var page in stream.PagesAsync(ctx.RequestAborted))
                {
                    foreach (var hit in page.Hits)
                    {
                        if (distinct is not null && (!distinct.Add(hit.Result) || distinct.Count <= skip)) continue;
                        if (remaining-- <= 0) break;
                        await WriteLineAsync(hit.Highlights is { } marked ? Magpie.Contracts.Documents.DocumentMetadata.With(hit.Result, "@highlights", JsonSerializer.SerializeToElement(marked)) : hit.Result);
                    }
                    foreach (var (id, document) in page.Included ?? [])
                        if (sent.Add(id)) await WriteLineAsync(new Dictionary<string, JsonElement> { ["@include"] = document });
                    await ctx.Response.Body.FlushAsync(ctx.RequestAborted);
                    if (ctx.RequestAborted.IsCancellationRequested) break;
                }
                failed = ctx.RequestAborted.IsCancellationRequested;
            }
            finally
            {
                QueryMetrics.Streamed("http", bytes);
                QueryMetrics.Queried("stream", started, failed);
            }
        });
        return app;
    }

    /// <summary>POST /shards/queries: an indexer answering for the shards it holds (Kafka mode; the query target asks).</summary>
    public static IEndpointRouteBuilder MapShardQueryEndpoint(this IEndpointRouteBuilder app)
    {
        app.MapPost("/shards/queries", async (ShardQuery request, LocalShardOwner owner, CancellationToken ct) =>
        {
            try { return Results.Json(await owner.SearchAsync(request, ct), WireJson.Web); }
            catch (QueryProblem e) { return Problem(e); }
        });
        // The query target ending a stream: the snapshot it held here goes now rather than at the keep-alive.
        app.MapDelete("/shards/snapshots/{id}", async (string id, LocalShardOwner owner) =>
        {
            await owner.ReleaseAsync(id);
            return Results.NoContent();
        });
        return app;
    }

    private static async Task<(QueryRequest, RqlQuery)> ReadAsync(HttpContext ctx)
    {
        QueryRequest? request;
        try { request = await JsonSerializer.DeserializeAsync<QueryRequest>(ctx.Request.Body, JsonSerializerOptions.Web, ctx.RequestAborted); }
        catch (JsonException e) { throw new QueryProblem(ErrorKind.Invalid, $"body is not a query request: {e.Message}"); }
        if (request is null || string.IsNullOrWhiteSpace(request.Query)) throw new QueryProblem(ErrorKind.Invalid, "body needs \"query\": an RQL query");
        var query = LocalShardOwner.Parse(request.Query, request.AllParameters, request.Facets, request.FacetsOnly);
        if (query.IsOperation) throw new QueryProblem(ErrorKind.Invalid, "update and delete by query run as operations: POST /operations/queries with the same body");
        return (request, query);
    }

    /// <summary>
    /// <c>select distinct</c>: every hit is read (from one snapshot, as a stream reads them), each result kept once; the page is
    /// taken from the distinct results, and the total is how many there are.
    /// </summary>
    private static async Task<(long Total, List<JsonElement> Kept, bool Stale, long Etag)> DistinctPageAsync(QueryCoordinator coordinator, QueryRequest request,
        RqlQuery query, int start, int pageSize, CancellationToken ct)
    {
        if (request.Cursor is not null) throw new QueryProblem(ErrorKind.Invalid, "select distinct pages by start and pageSize, not by cursor");
        await using var stream = await DistinctStreamAsync(coordinator, request, query, ct);
        var distinct = new DistinctResults();
        var kept = new List<JsonElement>();
        await foreach (var page in stream.PagesAsync(ct))
            foreach (var hit in page.Hits)
                if (distinct.Add(hit.Result) && distinct.Count > start && kept.Count < pageSize) kept.Add(hit.Result);
        return (distinct.Count, kept, stream.IsStale, stream.IndexEtag);
    }

    /// <summary>Every hit of a distinct query from one snapshot: its offset and limit count distinct results, so they are applied here, not by the owners.</summary>
    private static Task<QueryStream> DistinctStreamAsync(QueryCoordinator coordinator, QueryRequest request, RqlQuery query, CancellationToken ct) =>
        coordinator.StreamAsync(request.ToCoordinator() with { Start = 0 }, query with { Limit = null, Offset = null }, ct);

    /// <summary>
    /// RavenDB's shape of <c>include highlight(…)</c> on a page: field → document id → fragments (an entry of a map producing several
    /// per document adds its fragments to the document's).
    /// </summary>
    private static Dictionary<string, Dictionary<string, List<string>>> Highlightings(IEnumerable<ShardHit> hits)
    {
        var byField = new Dictionary<string, Dictionary<string, List<string>>>(StringComparer.Ordinal);
        foreach (var hit in hits)
            foreach (var (field, fragments) in hit.Highlights ?? [])
            {
                if (!byField.TryGetValue(field, out var byId)) byField[field] = byId = new(StringComparer.Ordinal);
                if (!byId.TryGetValue(hit.Id!, out var list)) byId[hit.Id!] = list = [];
                list.AddRange(fragments);
            }
        return byField;
    }

    /// <summary><c>include timings()</c>: parsing here, then each stage as long as the slowest owner took, and the whole request.</summary>
    private static Dictionary<string, double> Timings(ShardPage page, double parsed, long started)
    {
        var timings = new Dictionary<string, double> { ["parse"] = Math.Round(parsed, 3) };
        foreach (var (stage, ms) in page.Timings ?? []) timings[stage] = ms;
        timings["total"] = Math.Round(Stopwatch.GetElapsedTime(started).TotalMilliseconds, 3);
        return timings;
    }

    private static IResult Problem(QueryProblem e)
    {
        var extensions = Problems.At(e.Line, e.Column);
        if (e.Code is { } code) (extensions ??= [])["code"] = code;
        return Problems.Of(e.Kind, e.Message, extensions);
    }
}
