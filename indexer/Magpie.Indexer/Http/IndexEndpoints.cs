using Magpie.Http;
using Magpie.Contracts.Search;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Definitions;
using Magpie.Indexer.Indexing;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Shards;
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
        app.MapGet("/indexes/{**path}", async (string path, IndexDefinitionStore store, IndexRegistry registry, CancellationToken ct) =>
        {
            var (name, action) = Split(path);
            if (action == "history")
                return store.History(name) is { Count: > 0 } history ? Results.Json(history, IndexDefinitionStore.Json) : NotFound(name);
            if (!store.Current.TryGetValue(name, out var definition)) return NotFound(name);
            return action switch
            {
                null => Results.Json(new
                {
                    name, definition, status = Status(name, definition, registry),
                    // A changed definition being built side by side: it serves once caught up (or when swapped in).
                    replacement = store.Pending.GetValueOrDefault(name) is { } next
                        ? new { definition = next, status = Status(name, next, registry, next.Fingerprint()) }
                        : null,
                }, IndexDefinitionStore.Json),
                "stats" => Results.Json(await StatsAsync(name, registry, ct), IndexDefinitionStore.Json),
                _ => NotFound(path),
            };
        });
        app.MapPut("/indexes/{**name}", async (string name, HttpRequest request, IndexDefinitionStore store) =>
        {
            IndexDefinition? definition;
            try { definition = await JsonSerializer.DeserializeAsync<IndexDefinition>(request.Body, IndexDefinitionStore.Json); }
            catch (JsonException e) { return Problem(400, $"body is not an index definition: {e.Message}"); }
            if (definition is null) return Problem(400, "body must be { \"maps\": [...], \"fields\": {...} }");
            try { await store.PutAsync(name, definition, options.ScriptLimits, request.HttpContext.RequestAborted); }
            catch (IndexDefinitionException e) { return Problem(e); }
            catch (Confluent.Kafka.KafkaException e) { return Problem(503, $"the definition could not be kept in magpie.indexes: {e.Error.Reason}"); }
            return Results.NoContent();
        });
        app.MapDelete("/indexes/{**name}", async (string name, IndexDefinitionStore store, CancellationToken ct) =>
        {
            try { await store.DeleteAsync(name, ct); }
            catch (IndexDefinitionException e) { return Problem(e); }
            catch (Confluent.Kafka.KafkaException e) { return Problem(503, $"the deletion could not be kept in magpie.indexes: {e.Error.Reason}"); }
            return Results.NoContent();
        });
        app.MapPost("/indexes/test", async (HttpRequest request, IIndexShards shards, IndexRegistry registry) =>
        {
            IndexTrial.Request? trial;
            try { trial = await JsonSerializer.DeserializeAsync<IndexTrial.Request>(request.Body, IndexDefinitionStore.Json, request.HttpContext.RequestAborted); }
            catch (JsonException e) { return Problem(400, $"body is not {{ \"definition\": {{…}}, \"sampleSize\": n }}: {e.Message}"); }
            if (trial is null) return Problem(400, "body must be { \"definition\": {…}, \"sampleSize\": n }");
            try
            {
                return Results.Json(await IndexTrial.RunAsync(trial, shards, options.ScriptLimits, request.HttpContext.RequestAborted, registry.Documents),
                    IndexDefinitionStore.Json);
            }
            catch (IndexDefinitionException e) { return Problem(e); }
        });
        app.MapPost("/indexes/{**path}", async (string path, IndexDefinitionStore store, IndexRegistry registry, IndexReplacements replacements, CancellationToken ct) =>
        {
            var (name, action) = Split(path);
            if (action is not ("reset" or "swap" or "errors/retry"))
                return Problem(404, $"POST /indexes/{{name}}/reset, /swap, /errors/retry and POST /indexes/test are the POSTs here");
            if (!store.Current.ContainsKey(name)) return NotFound(name);
            if (action == "errors/retry")
            {
                // Every indexer of the index retries its own shards' failed documents; the answer counts this process's.
                var failing = registry.Workers(name).Concat(registry.MapSide(name)).Sum(w => w.Status.Failures().Ids.Count(id => !id.StartsWith(IndexWorker.ReduceKeyPrefix, StringComparison.Ordinal)));
                try { await store.RetryAsync(name, ct); }
                catch (Confluent.Kafka.KafkaException e) { return Problem(503, $"the retry could not be sent through magpie.indexes: {e.Error.Reason}"); }
                return Results.Json(new { retrying = failing }, IndexDefinitionStore.Json, statusCode: StatusCodes.Status202Accepted);
            }
            if (action == "swap")
            {
                try
                {
                    return await replacements.SwapAsync(name, ct)
                        ? Results.NoContent()
                        : Problem(409, $"index '{name}' has no replacement being built: PUT a changed definition first");
                }
                catch (Confluent.Kafka.KafkaException e) { return Problem(503, $"the swap could not be kept in magpie.indexes: {e.Error.Reason}"); }
            }
            await registry.ResetAsync(name);
            return Results.NoContent();
        });
        return app;
    }

    private static (string Name, string? Action) Split(string path)
    {
        foreach (var action in new[] { "stats", "reset", "history", "swap", "errors/retry" })
            if (path.EndsWith("/" + action, StringComparison.Ordinal)) return (path[..^(action.Length + 1)], action);
        return (path, null);
    }

    /// <summary>What an index has done: etags, staleness, entries, errors; in Kafka mode summed over the shards this process owns, which are listed.</summary>
    /// <remarks><paramref name="version"/>: a replacement being built (null: the serving version).</remarks>
    public static object Status(string name, IndexDefinition definition, IndexRegistry registry, string? version = null)
    {
        var shards = registry.Workers(name, version).Select(w => (Worker: w, State: w.Status.Snapshot(), Backlog: w.Backlog())).ToList();
        // Kafka map/reduce: the map side (its own workers) records the map errors and can fail on its own.
        var mapWorkers = registry.MapSide(name, version);
        var mapSide = mapWorkers.Select(w => w.Status.Snapshot()).ToList();
        var all = shards.Select(s => s.State).Concat(mapSide).ToList();
        var failure = all.Select(s => s.Failure).FirstOrDefault(f => f is not null) ;
        var embedded = shards is [{ Worker.Shard: IIndexShards.All }];
        return new
        {
            name,
            version = definition.Fingerprint(),
            state = shards.Count == 0 ? "not running" : failure is null ? "running" : "error",
            indexedEtag = shards.Count == 0 ? 0 : shards.Max(s => s.State.IndexedEtag),
            lastDocumentEtag = embedded ? shards[0].Worker.LastDocumentEtag() : null,
            // Kafka map/reduce: the results are current only once the map side has also read its changes to the end.
            isStale = shards.Count == 0 || shards.Any(s => s.Backlog is not 0) || mapWorkers.Any(w => w.Backlog() is not 0),
            entries = shards.Sum(s => s.State.Entries),
            errorCount = all.Sum(s => s.ErrorCount),
            errors = all.SelectMany(s => s.Errors).OrderByDescending(e => e.At).Take(20).ToList(),
            failure,
            heldSnapshots = shards.Sum(s => s.Worker.HeldSnapshots),
            shards = embedded ? null : shards.Select(s => new
            {
                partition = s.Worker.Shard,
                indexedEtag = s.State.IndexedEtag,
                entries = s.State.Entries,
                backlog = s.Backlog,
                nextOffset = s.Worker.Position.Next.GetValueOrDefault(s.Worker.Shard.ToString()),
            }),
        };
    }

    private static async Task<object> StatsAsync(string name, IndexRegistry registry, CancellationToken ct)
    {
        var workers = registry.Workers(name);
        var shards = workers.Select(w => w.Status.Snapshot()).ToList();
        // Per shard here: the engine's facet columns (this index's share, the engine's total within its budget) and the id filter.
        var caches = new List<FacetCacheStats>();
        var filters = new List<KnownIdsStats>();
        var graphs = new List<VectorGraphStats>();
        foreach (var index in workers.Select(w => w.Index).OfType<IIndexPersistence>())
        {
            try
            {
                var state = await index.StateAsync(ct);
                caches.Add(state.FacetCache);
                filters.Add(state.KnownIds);
                graphs.Add(state.VectorGraphs);
            }
            catch (IndexEngineException) { }   // closing under us: left out of the figures
        }
        var mapSide = registry.MapSide(name).Select(w => w.Status.Snapshot()).ToList();
        var all = shards.Concat(mapSide).ToList();
        return new
        {
            name,
            batches = shards.Sum(s => s.Batches),
            documentsIndexed = shards.Sum(s => s.DocumentsIndexed),
            entries = shards.Sum(s => s.Entries),
            refreshes = shards.Sum(s => s.Refreshes),
            refreshMs = Math.Round(shards.Sum(s => s.RefreshMs), 1),
            errorCount = all.Sum(s => s.ErrorCount),
            recentBatches = shards.SelectMany(s => s.RecentBatches).OrderByDescending(b => b.At).Take(20).Reverse().ToList(),
            // Kafka map/reduce: the map side's batches (map, then publish to the mapped topic as reduceMs).
            mapSideBatches = mapSide.Count == 0 ? null : mapSide.SelectMany(s => s.RecentBatches).OrderByDescending(b => b.At).Take(20).Reverse().ToList(),
            errors = all.SelectMany(s => s.Errors).OrderByDescending(e => e.At).Take(20).ToList(),
            facetCache = caches.Count == 0 ? null : new
            {
                bytes = caches.Sum(c => c.IndexBytes),
                columns = caches.Sum(c => c.IndexEntries),
                engineBytes = caches[0].TotalBytes,
                engineBudgetBytes = caches[0].BudgetBytes,
                engineColumns = caches[0].TotalEntries,
                hits = caches[0].Hits,
                misses = caches[0].Misses,
                evictions = caches[0].Evictions,
            },
            // Nearest-neighbour graphs of this process's shards: segments searched through one, and those waiting for theirs.
            vectorGraphs = graphs.Sum(g => g.Built + g.Pending) == 0 ? null : new
            {
                built = graphs.Sum(g => g.Built),
                pending = graphs.Sum(g => g.Pending),
                vectors = graphs.Sum(g => g.Vectors),
            },
            // The filter of known ids over this process's shards: shards still filling it, or past its bound, write updates only.
            knownIds = filters.Count == 0 ? null : new
            {
                bytes = filters.Sum(f => f.Bytes),
                shardsFilling = filters.Count(f => f.Filling),
                shardsFull = filters.Count(f => f.Full),
            },
        };
    }

    private static IResult NotFound(string name) => Problem(404, $"index '{name}' does not exist");

    private static IResult Problem(int status, string detail) => Problems.Of(status, detail);

    private static IResult Problem(IndexDefinitionException e) => Problems.Of(e.Kind, e.Message, Problems.At(e.Line, e.Column));
}
