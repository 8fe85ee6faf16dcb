using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.MapReduce;
using Magpie.Indexer.Maps;
using Magpie.Indexer.Shards;
using Magpie.Scripting;

namespace Magpie.Indexer.Definitions;

/// <summary>
/// <c>POST /indexes/test</c>: a definition tried on a sample before it is deployed. The maps run over the first documents of
/// their collections on the change feed this process indexes (the latest version of each among what was read), as the
/// index would run them — the entries as the engine would take them (field rules, limits) — and a reduce over those
/// entries; every document's error comes back beside them. Nothing is created or kept.
/// </summary>
public static class IndexTrial
{
    public const int MaxSample = 1_000;
    public static readonly TimeSpan ReadTime = TimeSpan.FromSeconds(10);

    public sealed record Request(IndexDefinition? Definition, int SampleSize = 10);

    public sealed record DocumentEntries(string Id, IReadOnlyList<JsonNode?> Entries);

    public sealed record DocumentError(string Id, string Error);

    public sealed record Result(int Documents, IReadOnlyList<DocumentEntries> Entries, IReadOnlyList<JsonNode?>? Reduced, IReadOnlyList<DocumentError> Errors);

    /// <summary>Throws <see cref="IndexDefinitionException"/> (400) for a definition or sample size that can't be tried.</summary>
    /// <param name="lookup">Where the maps' <c>load(id)</c> reads (the store, or an ingest process in Kafka mode); null: maps that load are refused.</param>
    public static async Task<Result> RunAsync(Request request, IIndexShards shards, ScriptLimits limits, CancellationToken ct,
        Contracts.Documents.IDocumentLookup? lookup = null)
    {
        if (request.Definition is not { } definition) throw new IndexDefinitionException(400, "body needs \"definition\": { \"maps\": [...] }");
        if (request.SampleSize is < 1 or > MaxSample) throw new IndexDefinitionException(400, $"sampleSize must be 1 to {MaxSample:N0}, not {request.SampleSize}");
        MapScript maps;
        ReduceScript? reduce = null;
        try
        {
            DefinitionCompiler.Check(definition, limits);
            maps = MapScript.Compile(definition.Maps, limits);
            if (maps.Loads && lookup is null)
                throw new IndexDefinitionException(400, "load() reads documents through an ingest process on Kafka indexers: give this indexer MAGPIE__INGESTURL");
            if (lookup is not null) maps.Loader = id => lookup.GetAsync(id, ct).AsTask().GetAwaiter().GetResult();
            if (definition.Reduce is { } r) reduce = ReduceScript.Compile(r, limits);
        }
        catch (ScriptSyntaxException e) { throw new IndexDefinitionException(400, e.Message, e.Line, e.Column, e); }

        var sample = await SampleAsync(shards, maps, request.SampleSize, ct);
        var entries = new List<DocumentEntries>();
        var errors = new List<DocumentError>();
        var mapped = new List<string>();
        foreach (var change in sample)
        {
            try
            {
                foreach (var e in maps.Run(change)) EntryMapping.From(e, definition);   // what the engine would refuse, refused here too
                var json = maps.RunJson(change);
                mapped.AddRange(json);
                entries.Add(new DocumentEntries(change.Id, json.Select(j => JsonNode.Parse(j)).ToList()));
            }
            catch (Exception e) when (e is ScriptRunException or EntryRefusedException) { errors.Add(new DocumentError(change.Id, e.Message)); }
        }
        List<JsonNode?>? reduced = null;
        if (reduce is not null)
        {
            reduced = [];
            try
            {
                foreach (var group in mapped.GroupBy(reduce.KeyOf))
                    reduced.Add(JsonNode.Parse(reduce.Aggregate(group.Key, group)));
            }
            catch (ScriptRunException e) { errors.Add(new DocumentError("(reduce)", e.Message)); }
        }
        return new Result(sample.Count, entries, reduced, errors);
    }

    /// <summary>The first <paramref name="size"/> documents of the maps' collections on the owned shards' feeds, each as last read.</summary>
    private static async Task<List<ChangeEvent>> SampleAsync(IIndexShards shards, MapScript maps, int size, CancellationToken ct)
    {
        var latest = new Dictionary<string, ChangeEvent>(StringComparer.Ordinal);
        using var time = CancellationTokenSource.CreateLinkedTokenSource(ct);
        time.CancelAfter(ReadTime);
        foreach (var shard in shards.Owned)
        {
            var feed = shards.FeedOf(shard);
            var end = await feed.EndAsync(time.Token);
            try
            {
                await foreach (var batch in feed.ReadAsync(ChangeFeedPosition.Beginning, 512, time.Token))
                {
                    foreach (var change in batch.Changes.Where(c => maps.Covers(c.Collection)))
                    {
                        if (change.Op == ChangeOp.Delete) latest.Remove(change.Id);
                        else if (latest.ContainsKey(change.Id) || latest.Count < size) latest[change.Id] = change;
                    }
                    // Past the end as it was when the trial started, or enough documents: this shard is read.
                    if (latest.Count >= size || end is not null && Reached(batch.After, end.After)) break;
                }
            }
            catch (OperationCanceledException) when (!ct.IsCancellationRequested) { break; }
            if (latest.Count >= size) break;
        }
        return latest.Values.ToList();
    }

    private static bool Reached(ChangeFeedPosition at, ChangeFeedPosition end) =>
        end.Next.All(e => at.Next.TryGetValue(e.Key, out var next) && next >= e.Value);
}
