using Magpie.Contracts;
using System.Runtime.CompilerServices;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Query.Facets;
using Magpie.Query.Rql;

namespace Magpie.Query.Shards;

/// <summary>
/// Runs a query over every shard of its index: asks each owner for its top hits after the cursor, merges
/// by cursor (sort values, then document id — the same order in every shard), skips and takes. Totals add
/// up; a page is stale if any shard was, or if some partition had no owner. Owners that typed a sort field
/// differently (numbers in one shard, none in another) are asked again with the field numeric everywhere.
/// </summary>
public sealed class QueryCoordinator(IShardDirectory directory, IIndexDefinitions definitions, AutoIndexes autoIndexes, InputOffsets? inputOffsets = null,
    Contracts.Changes.IRelayedChanges? relayed = null, Embeddings.Connections.EmbeddingConnections? embedders = null)
{
    /// <summary>One page, from the shards as they are now.</summary>
    public async Task<ShardPage> PageAsync(CoordinatorRequest request, RqlQuery query, int take, int skip, string? after, bool wait, CancellationToken ct)
    {
        (var index, var layout, wait) = await LayoutForAsync(request, query, after, wait, ct);
        request = await AcrossShardsAsync(request, query, index, layout, wait, ct);
        return await PinnedAsync(request, index, async version =>
            (await AskAsync(Asked(layout), Base(request, index, version, layout, wait), query, take, skip, after, hold: false, layout.Complete, ct)).Page, ct);
    }

    /// <summary>
    /// Runs <paramref name="ask"/> pinned to the version of the index that serves as this process knows it; while a side-by-side
    /// rebuild switches, an owner that already retired that version says so, and the query runs again once this process has read
    /// the switch too (until the request's timeout): every owner always answers from the same version.
    /// </summary>
    private async Task<T> PinnedAsync<T>(CoordinatorRequest request, string index, Func<string?, Task<T>> ask, CancellationToken ct)
    {
        var deadline = DateTime.UtcNow + TimeSpan.FromMilliseconds(Math.Clamp(request.TimeoutMs, 1_000, 300_000));
        while (true)
        {
            var version = definitions.Current.GetValueOrDefault(index)?.Fingerprint();
            try { return await ask(version); }
            catch (QueryProblem e) when (e.Code == QueryProblem.VersionReplaced && DateTime.UtcNow < deadline)
            {
                await Waits.UntilAsync(() => definitions.Current.GetValueOrDefault(index)?.Fingerprint() != version, deadline - DateTime.UtcNow, ct);
            }
        }
    }

    /// <summary>
    /// The first page of a stream: each owner holds a snapshot of its shards, so every later page
    /// (<see cref="QueryStream.PagesAsync"/>) reads the same point in time. Dispose the stream to let them go.
    /// </summary>
    public async Task<QueryStream> StreamAsync(CoordinatorRequest request, RqlQuery query, CancellationToken ct)
    {
        var take = QueryStream.FirstTake(query);
        if (query.Facets.Count > 0) throw new QueryProblem(ErrorKind.Invalid, "facets are answered by POST /queries, not streamed");
        if (query.Suggestions.Count > 0) throw new QueryProblem(ErrorKind.Invalid, "suggestions are answered by POST /queries, not streamed");
        var after = request.Cursor;
        var (index, layout, wait) = await LayoutForAsync(request, query, after, request.WaitForNonStaleResults, ct);
        request = await AcrossShardsAsync(request with { WaitForNonStaleResults = wait }, query, index, layout, wait, ct);
        return await PinnedAsync(request, index, async version =>
        {
            var baseQuery = Base(request, index, version, layout, request.WaitForNonStaleResults);
            var (first, held) = await AskAsync(Asked(layout), baseQuery, query, take, query.Offset ?? request.Start, after, hold: true, layout.Complete, ct);
            return new QueryStream(this, held, baseQuery with { WaitForNonStale = false, Target = null, NumericSorts = first.NumericSorts }, query, first);
        }, ct);
    }

    /// <summary>
    /// What a query needs decided over every shard before its owners are asked, passed to them as parameters: a named document's
    /// text (moreLikeThis), a sharded vector.search's threshold, a hybrid query's fused scores.
    /// </summary>
    private async Task<CoordinatorRequest> AcrossShardsAsync(CoordinatorRequest request, RqlQuery query, string index, ShardLayout layout, bool wait, CancellationToken ct)
    {
        request = await WithMoreLikeThisAsync(request, query, index, ct);
        request = await WithQueryEmbeddingsAsync(request, query, index, ct);
        request = await WithDocumentVectorsAsync(request, query, index, layout, wait, ct);
        request = await WithVectorThresholdAsync(request, query, index, layout, wait, ct);
        return await WithHybridAsync(request, query, index, layout, wait, ct);
    }

    /// <summary>
    /// <c>moreLikeThis(id() = …)</c>: the document's text in the compared fields, as the index holds it (stored, or the document's),
    /// read here once through the owners — whichever shard holds it — and handed to every owner as a parameter
    /// (<see cref="RqlMoreLikeThis.Resolved"/>), so all of them look for the same words. A document that does not exist is liked by none.
    /// </summary>
    private async Task<CoordinatorRequest> WithMoreLikeThisAsync(CoordinatorRequest request, RqlQuery query, string index, CancellationToken ct)
    {
        var clauses = RqlConditionFields.Nodes(query.Where).OfType<RqlMoreLikeThis>().Where(m => m.Id is not null).ToList();
        if (clauses.Count == 0) return request;
        var parameters = new Dictionary<string, JsonElement>(request.Parameters ?? []);
        foreach (var m in clauses)
        {
            var id = DocumentId(m.Id!, parameters, "moreLikeThis's id() is compared with a string");
            var fields = m.Fields.Count > 0 ? m.Fields : Planned(index, request, p => p.SearchFields());
            if (fields.Count == 0) continue;   // the planner says why
            var rql = $"from index {RqlLexer.Quote(index)} where id() = $id select {string.Join(", ", fields.Select(RqlLexer.Quote))}";
            var own = new CoordinatorRequest
            {
                Query = rql, Parameters = new() { ["id"] = JsonSerializer.SerializeToElement(id) }, TimeoutMs = request.TimeoutMs,
                WaitForNonStaleResults = request.WaitForNonStaleResults,
            };
            var page = await PageAsync(own, LocalShardOwner.Parse(rql, own.Parameters, null), 1, 0, null, request.WaitForNonStaleResults, ct);
            parameters[m.Resolved] = page.Hits.FirstOrDefault()?.Result ?? JsonSerializer.SerializeToElement(new Dictionary<string, string>());
        }
        return request with { Parameters = parameters };
    }

    /// <summary>
    /// <c>vector.search(embedding.text(…), $q)</c>: the query's text embedded here, once, and handed to every owner as a parameter
    /// (<see cref="RqlVectorSearch.Embedded"/>), so the provider is asked once per query rather than once per process holding shards.
    /// </summary>
    private async Task<CoordinatorRequest> WithQueryEmbeddingsAsync(CoordinatorRequest request, RqlQuery query, string index, CancellationToken ct)
    {
        if (!RqlConditionFields.Nodes(query.Where).OfType<RqlVectorSearch>().Any(v => v.Embedding is not null && !v.ForDocument)) return request;
        Dictionary<string, float[]> vectors;
        try { vectors = await new QueryPlanner(definitions.Current[index], request.Parameters, embedders: embedders).QueryVectorsAsync(query.Where, ct); }
        catch (RqlException e) { throw new QueryProblem(ErrorKind.Invalid, e.Message, e.Line, e.Column); }
        catch (Embeddings.Connections.EmbeddingUnavailableException e) { throw new QueryProblem(ErrorKind.Unavailable, e.Message); }
        var parameters = new Dictionary<string, JsonElement>(request.Parameters ?? []);
        foreach (var (name, vector) in vectors) parameters[name] = JsonSerializer.SerializeToElement(vector);
        return request with { Parameters = parameters };
    }

    /// <summary>
    /// <c>vector.search(Field, embedding.forDoc($id))</c>: the vector the index holds for the document in that field, read here once
    /// through the owners — whichever shard holds it — and handed to every owner as a parameter (<see cref="RqlVectorSearch.Resolved"/>;
    /// empty when the document has none: it is like none). A document whose map made several entries with a vector is refused:
    /// which of them it is like would be a guess.
    /// </summary>
    private async Task<CoordinatorRequest> WithDocumentVectorsAsync(CoordinatorRequest request, RqlQuery query, string index, ShardLayout layout, bool wait, CancellationToken ct)
    {
        var searches = RqlConditionFields.Nodes(query.Where).OfType<RqlVectorSearch>().Where(v => v.ForDocument).ToList();
        if (searches.Count == 0) return request;
        var parameters = new Dictionary<string, JsonElement>(request.Parameters ?? []);
        foreach (var v in searches)
        {
            var id = DocumentId(v.Vector, parameters, "embedding.forDoc takes a document id (a string)");
            var field = Planned(index, request, p => p.VectorField(v));
            var vectors = await PinnedAsync(request, index, async version =>
            {
                var pages = await AskAllAsync(Asked(layout), o => Base(request, index, version, layout, wait) with
                {
                    Query = $"from index {RqlLexer.Quote(index)}", Parameters = new() { ["id"] = JsonSerializer.SerializeToElement(id) },
                    VectorsOf = field, Partitions = o.Partitions, Facets = null, FacetsOnly = false,
                }, ct);
                return pages.SelectMany(page => page.Hits).Select(h => h.Result).ToList();
            }, ct);
            if (vectors.Count > 1)
                throw new QueryProblem(ErrorKind.Invalid, $"embedding.forDoc: document '{id}' holds {vectors.Count} vectors in '{field}' (its map made several entries); it takes a document with one");
            parameters[v.Resolved] = vectors.Count == 1 ? vectors[0] : JsonSerializer.SerializeToElement(Array.Empty<float>());
        }
        return request with { Parameters = parameters };
    }

    /// <summary>A document id the query names (moreLikeThis, embedding.forDoc): a string, written or as a parameter; else a 400 saying <paramref name="what"/>.</summary>
    private static string DocumentId(RqlValue value, Dictionary<string, JsonElement> parameters, string what) => value.IsParameter
        ? parameters.TryGetValue(value.Parameter!, out var p) && p.ValueKind == JsonValueKind.String ? p.GetString()! : throw new QueryProblem(ErrorKind.Invalid, $"{what}: ${value.Parameter} is not one", 1, value.Position + 1)
        : value.Literal as string ?? throw new QueryProblem(ErrorKind.Invalid, what, 1, value.Position + 1);

    /// <summary>
    /// A sharded <c>vector.search</c>: each shard would answer its own k nearest, and together they would give more than k. First every
    /// owner says the similarities of its k nearest; the k-th best of them all becomes the threshold every shard then applies
    /// (<see cref="Rql.QueryPlanner.VectorThreshold"/>), so together they answer the global k nearest (more only where similarities tie).
    /// </summary>
    private async Task<CoordinatorRequest> WithVectorThresholdAsync(CoordinatorRequest request, RqlQuery query, string index, ShardLayout layout, bool wait, CancellationToken ct)
    {
        if (RqlConditionFields.Conjuncts(query.Where).OfType<RqlVectorSearch>().FirstOrDefault() is not { } search || layout.Target is null && layout.Owners.Count <= 1)
            return request;
        var k = Planned(index, request, p => p.K(search));
        var scores = await PinnedAsync(request, index, async v =>
        {
            var pages = await AskAllAsync(Asked(layout), o => Base(request, index, v, layout, wait) with { ScoresOnly = true, Take = k, Partitions = o.Partitions }, ct);
            return pages.SelectMany(p => p.Hits).Select(h => h.Result.GetProperty("@metadata").GetProperty("@index-score").GetSingle()).ToList();
        }, ct);
        if (scores.Count < k) return request;
        var parameters = new Dictionary<string, JsonElement>(request.Parameters ?? []) { [Rql.QueryPlanner.VectorThreshold] = JsonSerializer.SerializeToElement(scores.OrderDescending().ElementAt(k - 1)) };
        return request with { Parameters = parameters };
    }

    /// <summary>
    /// <c>hybrid(text, vector.search(…))</c>, as Elasticsearch's reciprocal rank fusion does it: each ranking is taken over every shard
    /// (each owner's best of it, merged by score, the top <c>Window</c> kept), each document scores Σ 1 / (RankConstant + its rank),
    /// and every owner then answers those ids with those scores (<see cref="Rql.QueryPlanner.HybridScores"/>).
    /// </summary>
    private async Task<CoordinatorRequest> WithHybridAsync(CoordinatorRequest request, RqlQuery query, string index, ShardLayout layout, bool wait, CancellationToken ct)
    {
        if (RqlConditionFields.Conjuncts(query.Where).OfType<RqlHybrid>().FirstOrDefault() is not { } hybrid) return request;
        var options = Planned(index, request, p => p.HybridOptions(hybrid));
        var vectorK = Planned(index, request, p => p.K(hybrid.Vector));
        var fused = new Dictionary<string, float>(StringComparer.Ordinal);
        for (var retriever = 0; retriever < 2; retriever++)
        {
            var which = retriever;
            var ranked = await PinnedAsync(request, index, async v =>
            {
                var pages = await AskAllAsync(Asked(layout), o => Base(request, index, v, layout, wait) with
                {
                    ScoresOnly = true, HybridRetriever = which, Take = options.Window, Partitions = o.Partitions,
                }, ct);
                return pages.SelectMany(p => p.Hits)
                    .Select(h => (Id: h.Result.GetProperty("Id").GetString()!, Score: h.Result.GetProperty("@metadata").GetProperty("@index-score").GetSingle()))
                    .OrderByDescending(h => h.Score).ThenBy(h => h.Id, StringComparer.Ordinal).DistinctBy(h => h.Id)
                    .Take(which == 1 ? Math.Min(options.Window, vectorK) : options.Window).ToList();
            }, ct);
            for (var rank = 1; rank <= ranked.Count; rank++)
                fused[ranked[rank - 1].Id] = fused.GetValueOrDefault(ranked[rank - 1].Id) + 1f / (options.RankConstant + rank);
        }
        var parameters = new Dictionary<string, JsonElement>(request.Parameters ?? []) { [QueryPlanner.HybridScores] = JsonSerializer.SerializeToElement(fused) };
        return request with { Parameters = parameters };
    }

    /// <summary>What the index's planner makes of part of the query (as every owner will), its refusal a 400.</summary>
    private T Planned<T>(string index, CoordinatorRequest request, Func<QueryPlanner, T> plan)
    {
        try { return plan(new QueryPlanner(definitions.Current[index], request.Parameters)); }
        catch (RqlException e) { throw new QueryProblem(ErrorKind.Invalid, e.Message, e.Line, e.Column); }
    }

    private async Task<(string Index, ShardLayout Layout, bool Wait)> LayoutForAsync(CoordinatorRequest request, RqlQuery query, string? after, bool wait, CancellationToken ct)
    {
        var index = query.From.IsIndex ? query.From.Name : await autoIndexes.IndexForAsync(query, ct);
        if (!definitions.Current.ContainsKey(index)) throw new QueryProblem(ErrorKind.NotFound, $"index '{index}' does not exist");
        if (after is not null && SearchCursor.Parse(after) is null) throw new QueryProblem(ErrorKind.Invalid, "cursor is not one this server gave out");
        var layout = await directory.LayoutAsync(ct);
        // Indexers joining (or a rebalance): a query that waits for non-stale results also waits for every partition to have an owner.
        var deadline = DateTime.UtcNow + TimeSpan.FromMilliseconds(Math.Clamp(request.TimeoutMs, 0, 300_000));
        if (wait && !layout.Complete)
            await Waits.UntilAsync(async c => (layout = await directory.LayoutAsync(c)).Complete, deadline - DateTime.UtcNow, ct, poll: TimeSpan.FromMilliseconds(250));
        if (layout.Owners.Count == 0) throw new QueryProblem(ErrorKind.Unavailable, $"no indexer holds shards of '{index}' yet");
        // Non-stale means every change the store holds now, also those the relay has yet to publish: the topic's end alone missed them.
        if (wait && layout.Target is not null && relayed is not null)
        {
            if (await relayed.EndsAsync(deadline - DateTime.UtcNow, ct) is not { } ends) return (index, layout with { Complete = false }, wait);
            var target = new Dictionary<string, long>(layout.Target);
            foreach (var (partition, next) in ends) target[partition] = Math.Max(next, target.GetValueOrDefault(partition));
            layout = layout with { Target = target };
        }
        if (request.InputOffsets is { Count: > 0 } offsets)
        {
            if (inputOffsets is null)
                throw new QueryProblem(ErrorKind.Invalid, "waitForInputOffsets follows writes through magpie.documents (Kafka mode); embedded, waitForNonStaleResults covers every write");
            // Not applied within the timeout: the answer is stale (the shards are not asked to reach writes the ingest has not made).
            if (await inputOffsets.WaitAsync(offsets, deadline - DateTime.UtcNow, ct) is not { } covering) return (index, layout with { Complete = false }, wait);
            var target = new Dictionary<string, long>(layout.Target ?? []);
            foreach (var (partition, next) in covering) target[partition] = Math.Max(next, target.GetValueOrDefault(partition));
            return (index, layout with { Target = target }, true);
        }
        return (index, layout, wait);
    }

    private static List<HeldOwner> Asked(ShardLayout layout) => layout.Owners.Select(o => new HeldOwner(o.Owner, o.Partitions, null)).ToList();

    private static ShardQuery Base(CoordinatorRequest request, string index, string? version, ShardLayout layout, bool wait) => new()
    {
        Query = request.Query, Index = index, Version = version, Parameters = request.Parameters, Target = layout.Target, WaitForNonStale = wait, TimeoutMs = request.TimeoutMs,
        Facets = request.Facets, FacetsOnly = request.FacetsOnly, RandomSeed = Guid.NewGuid().ToString("N"),
    };

    /// <summary>Asks every owner (at its snapshot, if it holds one) and merges; with <paramref name="hold"/>, each owner holds a snapshot and says which.</summary>
    internal async Task<(ShardPage Page, List<HeldOwner> Owners)> AskAsync(List<HeldOwner> owners, ShardQuery baseQuery, RqlQuery query,
        int take, int skip, string? after, bool hold, bool complete, CancellationToken ct)
    {
        var single = owners.Count == 1;
        ShardQuery Ask(HeldOwner o, IReadOnlyList<string>? numeric, bool holdNow) => baseQuery with
        {
            After = after, Take = single ? take : skip + take, Skip = single ? skip : 0, Partitions = o.Partitions, NumericSorts = numeric,
            HoldSnapshot = holdNow && o.Snapshot is null, Snapshot = o.Snapshot,
        };
        var pages = await AskAllAsync(owners, o => Ask(o, baseQuery.NumericSorts, hold), ct);
        if (hold) owners = owners.Zip(pages, (o, p) => o with { Snapshot = p.Snapshot }).ToList();
        var numeric = pages.SelectMany(p => p.NumericSorts).Distinct().ToList();
        if (pages.Any(p => p.NumericSorts.Count != numeric.Count))
        {
            try { pages = await AskAllAsync(owners, o => Ask(o, numeric, false), ct); }
            catch when (hold)
            {
                await ReleaseAsync(owners);
                throw;
            }
        }

        var hits = single ? pages[0].Hits : ShardMerge.Page(pages.SelectMany(p => p.Hits), h => SearchCursor.Parse(h.Cursor)!, query, skip, take);
        var facets = query.Facets.Count == 0 ? null : FacetResults.Merge([.. pages.Select(p => p.Facets ?? throw new QueryProblem(ErrorKind.BadUpstream, $"a shard owner answered without the facets asked"))]);
        // The documents the kept hits include, each once, from whichever owner read it.
        Dictionary<string, JsonElement>? included = null;
        if (pages.Any(p => p.Included is not null))
        {
            var all = pages.SelectMany(p => p.Included ?? []).GroupBy(d => d.Key, StringComparer.OrdinalIgnoreCase).ToDictionary(g => g.Key, g => g.First().Value, StringComparer.OrdinalIgnoreCase);
            included = hits.SelectMany(h => h.Includes ?? []).Distinct(StringComparer.OrdinalIgnoreCase).Where(all.ContainsKey).ToDictionary(id => id, id => all[id]);
        }
        return (new ShardPage(pages.Sum(p => p.TotalResults), hits, !complete || pages.Any(p => p.IsStale), pages.Max(p => p.IndexEtag), numeric, Facets: facets)
        {
            Included = included,
            Suggestions = query.Suggestions.Count == 0 ? null
                : SuggestAnswer.Merge([.. pages.Select(p => p.Suggestions ?? throw new QueryProblem(ErrorKind.BadUpstream, "a shard owner answered without the suggestions asked"))]),
            DocumentsRead = pages.Sum(p => p.DocumentsRead),
            // Owners work side by side: a stage takes as long as its slowest owner.
            Timings = pages.Any(p => p.Timings is not null)
                ? pages.SelectMany(p => p.Timings ?? []).GroupBy(t => t.Key).ToDictionary(g => g.Key, g => Math.Round(g.Max(t => t.Value), 3)) : null,
        }, owners);
    }

    internal static async Task ReleaseAsync(IEnumerable<HeldOwner> owners) =>
        await Task.WhenAll(owners.Where(o => o.Snapshot is not null).Select(o => o.Owner.ReleaseAsync(o.Snapshot!)));

    /// <summary>Every owner's page; if one fails, the snapshots the others just took are let go before the failure surfaces.</summary>
    private static async Task<ShardPage[]> AskAllAsync(List<HeldOwner> owners, Func<HeldOwner, ShardQuery> ask, CancellationToken ct)
    {
        var tasks = owners.Select(o => o.Owner.SearchAsync(ask(o), ct)).ToList();
        try { return await Task.WhenAll(tasks); }
        catch
        {
            foreach (var (o, t) in owners.Zip(tasks))
                if (o.Snapshot is null && t.IsCompletedSuccessfully && t.Result.Snapshot is { } taken) await o.Owner.ReleaseAsync(taken);
            throw;
        }
    }
}

/// <summary>An owner a query asked: the partitions it held then, and the snapshot it holds for a stream.</summary>
public sealed record HeldOwner(IShardOwner Owner, IReadOnlyList<int>? Partitions, string? Snapshot);

/// <summary>
/// A query streamed page after page from the snapshots its owners hold (one point in time, whatever is written
/// meanwhile). Disposing it — the stream ended, or its client went away — releases them at once.
/// </summary>
public sealed class QueryStream(QueryCoordinator coordinator, List<HeldOwner> owners, ShardQuery baseQuery, RqlQuery query, ShardPage first)
    : IAsyncDisposable
{
    /// <summary>The first page is small, so the first rows go out at once.</summary>
    private const int FirstPageSize = 1_000;

    /// <summary>
    /// Later pages of projections are large: Lucene visits every hit of the query for each page after a cursor (it
    /// keeps the top N past the cursor), so pages of 1,000 made a 1M-hit stream cost 1,000 full passes (31.7k rows/s
    /// at 1M hits against 41k at 300k). Whole documents (up to 16 MB each) stay at 1,000 a page to bound memory.
    /// </summary>
    private int NextPageSize => query.Select.Count > 0 ? 10_000 : FirstPageSize;

    internal static int FirstTake(RqlQuery query) => (int)Math.Min(FirstPageSize, query.Limit ?? long.MaxValue);

    /// <summary>Whether the snapshot the stream reads was taken while the index was behind the documents (or a shard did not answer).</summary>
    public bool IsStale => first.IsStale;

    /// <summary>Whether the first page's results came from the values the index stores alone (no document read).</summary>
    public bool FromIndex => first.DocumentsRead == 0 && first.Hits.Count > 0;

    /// <summary>The index etag of the snapshot the stream reads.</summary>
    public long IndexEtag => first.IndexEtag;

    /// <summary>Every page up to the query's limit: the first (already read), then one after another from the held snapshots.</summary>
    public async IAsyncEnumerable<ShardPage> PagesAsync([EnumeratorCancellation] CancellationToken ct = default)
    {
        var remaining = query.Limit ?? long.MaxValue;
        var asked = FirstTake(query);
        var page = first;
        while (true)
        {
            yield return page;
            remaining -= page.Hits.Count;
            if (remaining <= 0 || page.Hits.Count < asked) yield break;
            asked = (int)Math.Min(NextPageSize, remaining);
            page = (await coordinator.AskAsync(owners, baseQuery, query, asked, 0, page.Hits[^1].Cursor, hold: false, complete: true, ct)).Page;
        }
    }

    public async ValueTask DisposeAsync() => await QueryCoordinator.ReleaseAsync(owners);
}
