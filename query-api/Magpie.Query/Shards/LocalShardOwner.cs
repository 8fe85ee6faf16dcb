using Magpie.Contracts;
using System.Diagnostics;
using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Query.Facets;
using Magpie.Query.Projections;
using Magpie.Query.Rql;
using Magpie.Scripting;

namespace Magpie.Query.Shards;

/// <summary>
/// The shards of an index held by this process: waits for them when asked (read-your-writes), searches
/// them with one plan, merges their hits by cursor, and resolves the hits into results — the document
/// (from the store beside it, or the source the index keeps in Kafka mode) or the projection.
/// </summary>
/// <param name="embedders">Who embeds a query's text for <c>vector.search(embedding.text(…), $q)</c> (null: the built-in model only).</param>
public sealed class LocalShardOwner(IIndexDefinitions definitions, ILocalShards local, IDocumentLookup? documents, SnapshotLeases leases,
    Embeddings.Connections.EmbeddingConnections? embedders = null) : IShardOwner
{
    /// <summary>Results of one page resolved at once (document reads in flight).</summary>
    private const int ResultReads = 8;

    public string Name => "local";

    public Task ReleaseAsync(string snapshot) => leases.ReleaseAsync(snapshot);

    public async Task<ShardPage> SearchAsync(ShardQuery request, CancellationToken ct)
    {
        var query = Parse(request.Query, request.Parameters, request.Facets, request.FacetsOnly).Seeded(request.RandomSeed);
        if (request.HybridRetriever is { } retriever) query = query.Retriever(retriever);
        if (request.ScoresOnly) query = query.ScoresOnly();
        var name = request.Index;
        if (request.Snapshot is { } lease)
        {
            var held = leases.Use(lease) ?? throw new QueryProblem(ErrorKind.Gone, $"snapshot {lease} was released (a stream idle for over {SnapshotLeases.KeepAlive.TotalSeconds:N0} s)");
            return await SearchAsync(request, query, held[0].Worker.Definition, held, stale: false, lease: lease, ct);
        }

        // A definition just made (an automatic index; Kafka mode: still on its way through magpie.indexes) gets until the timeout to start here.
        var deadline = DateTime.UtcNow + TimeSpan.FromMilliseconds(Math.Clamp(request.TimeoutMs, 0, 300_000));
        List<ILocalShard> Workers() => local.Shards(name, request.Version).Where(w => request.Partitions?.Contains(w.Shard) ?? true).ToList();
        bool Ready(List<ILocalShard> w) => w.Count > 0 && w.Count >= (request.Partitions?.Count ?? 0) && w.All(x => x.Searcher is not null);
        var workers = Workers();
        await Waits.UntilAsync(() =>
        {
            workers = Workers();
            // The version asked for was replaced here: the coordinator asks again for the one that serves now.
            if (!Ready(workers) && workers.Count == 0 && request.Version is { } version && local.Replaced(name, version))
                throw new QueryProblem(ErrorKind.Conflict, $"version {version} of index '{name}' was replaced by its rebuild; ask for the serving version") { Code = QueryProblem.VersionReplaced };
            return Ready(workers);
        }, deadline - DateTime.UtcNow, ct);
        if (!definitions.Current.ContainsKey(name)) throw new QueryProblem(ErrorKind.NotFound, $"index '{name}' does not exist");
        if (!Ready(workers)) throw new QueryProblem(ErrorKind.Unavailable, $"index '{name}' is not running here yet ({Starting(workers, request.Partitions)})");

        // The shards of one version, planned with the definition they were built from (the one serving, or the one asked for).
        var definition = workers[0].Definition;
        var stale = (await Task.WhenAll(workers.Select(w => w.IsStaleAsync(request.Target, request.WaitForNonStale, deadline - DateTime.UtcNow, ct)))).Any(s => s);
        if (request.VectorsOf is { } field)
        {
            var document = request.Parameters?.GetValueOrDefault("id") is { ValueKind: JsonValueKind.String } given ? given.GetString()! : throw new QueryProblem(ErrorKind.Invalid, "VectorsOf needs the document's id");
            var vectors = workers.SelectMany(w => w.Searcher!.VectorsOf(field, document)).Select(v => new ShardHit(JsonSerializer.SerializeToElement(v), "")).ToList();
            return new ShardPage(vectors.Count, vectors, stale, workers.Max(w => w.IndexedEtag), []);
        }
        if (!request.HoldSnapshot)
            return await SearchAsync(request, query, definition, workers.Select(w => new HeldShard(w, w.Searcher!, 0)).ToList(), stale, lease: null, ct);
        var (id, snapshots) = await leases.AcquireAsync(workers, ct);
        try { return await SearchAsync(request, query, definition, snapshots, stale, id, ct); }
        catch
        {
            await leases.ReleaseAsync(id);
            throw;
        }
    }

    private bool Retired(string index, IndexDefinition searched) =>
        definitions.Current.GetValueOrDefault(index)?.Fingerprint() != searched.Fingerprint() || local.Replaced(index, searched.Fingerprint());

    /// <summary>What a shard not ready yet is waiting for: no worker on it here (yet), or its index not open (yet).</summary>
    private static string Starting(List<ILocalShard> workers, IReadOnlyList<int>? asked)
    {
        var missing = asked?.Except(workers.Select(w => w.Shard)).Order().ToList() ?? [];
        var opening = workers.Where(w => w.Searcher is null).Select(w => w.Shard).Order().ToList();
        if (missing.Count == 0 && opening.Count == 0) return "starting";
        return string.Join("; ", new[]
        {
            missing.Count > 0 ? $"not started on partitions [{string.Join(", ", missing)}]" : null,
            opening.Count > 0 ? $"opening on partitions [{string.Join(", ", opening)}]" : null,
        }.Where(s => s is not null));
    }

    /// <summary>One page over <paramref name="shards"/> (each at its held snapshot, or now).</summary>
    private async Task<ShardPage> SearchAsync(ShardQuery request, RqlQuery query, IndexDefinition definition, IReadOnlyList<HeldShard> shards,
        bool stale, string? lease, CancellationToken ct)
    {
        var indexes = shards.Select(s => s.Index).ToList();
        SearchCursor? after = null;
        if (request.After is { } a && (after = SearchCursor.Parse(a)) is null) throw new QueryProblem(ErrorKind.Invalid, "cursor is not one this server gave out");

        QueryPlan plan;
        SearchPage[] pages;
        IReadOnlyList<IReadOnlyList<FacetBucket>>? facets = null;
        var clock = Stopwatch.StartNew();
        double planned = 0, searched = 0;
        try
        {
            plan = await QueryRunner.PlanAsync(indexes, definition, query, request.Parameters, request.NumericSorts, ct, embedders);
            planned = clock.Elapsed.TotalMilliseconds;
            if (plan.Suggestions.Count > 0)
                return new ShardPage(0, [], stale, shards.Max(s => s.Worker.IndexedEtag), plan.NumericSorts, lease)
                {
                    Suggestions = plan.Suggestions.Select(p => p.Answer(shards.SelectMany(s => s.Index.Suggest(p.Spec, s.Snapshot)))).ToList(),
                };
            if (query.Facets.Count > 0)
            {
                var specs = FacetPlan.Specs(query.Facets, definition, request.Parameters);
                var counted = await Task.WhenAll(shards.Select(s => s.Index.FacetsAsync(plan.Where, specs, s.Snapshot, ct)));
                facets = FacetResults.Merge([.. counted.Select(c => c.Facets)]);
                // Facets only: the count came with them; no page of results to read.
                if (query.FacetsOnly)
                    return new ShardPage(counted.Sum(c => c.TotalHits), [], stale, shards.Max(s => s.Worker.IndexedEtag), plan.NumericSorts, lease, facets);
            }
            // One shard pages in Lucene; several each return skip + take, merged here, then skipped.
            var skip = after is null ? request.Skip : 0;
            pages = shards.Count == 1
                ? [await plan.PageAsync(indexes[0], request.Take, skip, after, ct, shards[0].Snapshot)]
                : await Task.WhenAll(shards.Select(s => plan.PageAsync(s.Index, skip + request.Take, 0, after, ct, s.Snapshot)));
            if (indexes.Count > 1)
                pages = [new SearchPage(pages.Sum(p => p.TotalHits), ShardMerge.Page(pages.SelectMany(p => p.Hits), h => h.Cursor, query, skip, request.Take))];
        }
        catch (RqlException e) { throw new QueryProblem(ErrorKind.Invalid, e.Message, e.Line, e.Column); }
        catch (Embeddings.Connections.EmbeddingUnavailableException e) { throw new QueryProblem(ErrorKind.Unavailable, e.Message); }
        // The version searched retired under the query (its grace ended, a side-by-side switch): the coordinator asks again, pinned to the serving one.
        catch (IndexEngineException) when (Retired(request.Index, definition))
        {
            throw new QueryProblem(ErrorKind.Conflict, $"the version of index '{request.Index}' this query searched was replaced by its rebuild; ask for the serving version") { Code = QueryProblem.VersionReplaced };
        }
        catch (IndexEngineException e) { throw new QueryProblem(ErrorKind.Invalid, $"the index refused the query: {e.Message}"); }
        searched = clock.Elapsed.TotalMilliseconds;

        // Each hit's result may need its document from the store (a read of the log): several at once, so a page
        // does not wait on one read after another (a streamed projection of 300k hits: 11 s one by one).
        var highlights = plan.Highlights.Count > 0 ? new HitHighlights(plan.Highlights, plan.Where, indexes[0]) : null;
        using var results = new HitResults(query, documents, ScriptLimits.Default, definition.Fields.Where(f => f.Value.Store).Select(f => f.Key).ToHashSet(),
            highlights, highlights?.NeedsDocument(definition) ?? false, documentIds: definition.Reduce is null);
        var page = pages[0].Hits;
        var resolved = new (JsonElement? Result, IReadOnlyList<string> Includes, Dictionary<string, IReadOnlyList<string>>? Highlights)[page.Count];
        await Parallel.ForEachAsync(Enumerable.Range(0, page.Count), new ParallelOptions { MaxDegreeOfParallelism = ResultReads, CancellationToken = ct },
            async (i, token) => resolved[i] = await results.ResultOfAsync(page[i], token));
        var hits = new List<ShardHit>(page.Count);
        for (var i = 0; i < page.Count; i++)
            if (resolved[i].Result is { } r)
                hits.Add(new ShardHit(r, page[i].Cursor.ToString())
                {
                    Includes = resolved[i].Includes.Count > 0 ? resolved[i].Includes : null,
                    Id = query.Explanations || highlights is not null ? page[i].Id : null, Explanation = page[i].Explanation,
                    Highlights = resolved[i].Highlights,
                });
        var included = await results.IncludedAsync(hits.SelectMany(h => h.Includes ?? []), ct);
        return new ShardPage(pages.Sum(p => p.TotalHits), hits, stale, shards.Max(s => s.Worker.IndexedEtag), plan.NumericSorts, lease, facets)
        {
            Included = included,
            DocumentsRead = results.DocumentsRead,
            Timings = query.Timings ? new() { ["plan"] = planned, ["search"] = searched - planned, ["results"] = clock.Elapsed.TotalMilliseconds - searched } : null,
        };
    }

    /// <summary>The query with its facets: RQL's <c>select facet(…)</c>, then the request body's (<see cref="FacetJson"/>).</summary>
    public static RqlQuery Parse(string rql, IReadOnlyDictionary<string, JsonElement>? parameters, IReadOnlyList<JsonElement>? facets, bool facetsOnly = false)
    {
        try
        {
            var query = RqlParser.Parse(rql, parameters);
            // Distinct reads every hit in index order; a ranking's answer is its top k by score, which that read does not keep.
            if (query.Distinct && RqlConditionFields.Ranks(query.Where))
                throw new QueryProblem(ErrorKind.Invalid, "select distinct does not combine with vector.search, hybrid or moreLikeThis (their answer is a ranked top k): select the fields and keep distinct values client-side");
            return facets is null ? query : query with { Facets = [.. query.Facets, .. FacetJson.Read(facets)], FacetsOnly = query.FacetsOnly || facetsOnly };
        }
        catch (RqlException e) { throw new QueryProblem(ErrorKind.Invalid, e.Message, e.Line, e.Column); }
    }
}
