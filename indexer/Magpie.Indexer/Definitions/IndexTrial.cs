using Magpie.Contracts;
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

    /// <summary>The whole trial's mapping and reducing, however many documents: each run has the script limits, this bounds their sum.</summary>
    public static readonly TimeSpan RunTime = TimeSpan.FromSeconds(10);

    /// <summary>The most entry text a trial keeps and answers (the process holds it twice: as text and as the answer's tree).</summary>
    public const long MaxEntryBytes = 16L * 1024 * 1024;

    public sealed record Request(IndexDefinition? Definition, int SampleSize = 10);

    public sealed record DocumentEntries(string Id, IReadOnlyList<JsonNode?> Entries);

    public sealed record DocumentError(string Id, string Error);

    public sealed record Result(int Documents, IReadOnlyList<DocumentEntries> Entries, IReadOnlyList<JsonNode?>? Reduced, IReadOnlyList<DocumentError> Errors);

    /// <summary>Throws <see cref="IndexDefinitionException"/> (400) for a definition or sample size that can't be tried.</summary>
    /// <param name="lookup">Where the maps' <c>load(id)</c> reads (the store, or an ingest process in Kafka mode); null: maps that load are refused.</param>
    public static async Task<Result> RunAsync(Request request, IIndexShards shards, ScriptLimits limits, CancellationToken ct,
        Contracts.Documents.IDocumentLookup? lookup = null)
    {
        if (request.Definition is not { } definition) throw new IndexDefinitionException(ErrorKind.Invalid, "body needs \"definition\": { \"maps\": [...] }");
        if (request.SampleSize is < 1 or > MaxSample) throw new IndexDefinitionException(ErrorKind.Invalid, $"sampleSize must be 1 to {MaxSample:N0}, not {request.SampleSize}");
        MapScript maps;
        ReduceScript? reduce = null;
        // A run that loops is stopped when the trial's time is up, not only at its own timeout.
        using var time = CancellationTokenSource.CreateLinkedTokenSource(ct);
        limits = limits with { Stop = time.Token };
        try
        {
            DefinitionCompiler.Check(definition, limits);
            maps = MapScript.Compile(definition.Maps, limits);
            if (maps.Loads && lookup is null)
                throw new IndexDefinitionException(ErrorKind.Invalid, "load() reads documents through an ingest process on Kafka indexers: give this indexer MAGPIE__INGESTURL");
            if (lookup is not null) maps.Loader = id => lookup.GetAsync(id, ct).AsTask().GetAwaiter().GetResult();
            if (definition.Reduce is { } r) reduce = ReduceScript.Compile(r, limits);
        }
        catch (ScriptSyntaxException e) { throw new IndexDefinitionException(ErrorKind.Invalid, e.Message, e.Line, e.Column, e); }

        var sample = await SampleAsync(shards, maps, request.SampleSize, ct);
        time.CancelAfter(RunTime);
        var entries = new List<DocumentEntries>();
        var errors = new List<DocumentError>();
        var mapped = new List<string>();
        long kept = 0;
        try
        {
            foreach (var change in sample)
            {
                try
                {
                    foreach (var e in maps.Run(change)) EntryMapping.From(e, definition);   // what the engine would refuse, refused here too
                    var json = maps.RunJson(change);
                    kept += Keep(json, entries.Count);
                    mapped.AddRange(json);
                    entries.Add(new DocumentEntries(change.Id, json.Select(j => JsonNode.Parse(j)).ToList()));
                }
                catch (Exception e) when (e is ScriptRunException or EntryRefusedException) { errors.Add(new DocumentError(change.Id, e.Message)); }
            }
        }
        catch (OperationCanceledException) when (!ct.IsCancellationRequested) { throw OverTime(entries.Count + errors.Count, sample.Count); }
        List<JsonNode?>? reduced = null;
        if (reduce is not null)
        {
            reduced = [];
            try
            {
                foreach (var group in mapped.GroupBy(reduce.KeyOf))
                {
                    var output = reduce.Aggregate(group.Key, group);
                    kept += Keep([output], entries.Count);
                    reduced.Add(JsonNode.Parse(output));
                }
            }
            catch (ScriptRunException e) { errors.Add(new DocumentError("(reduce)", e.Message)); }
            catch (OperationCanceledException) when (!ct.IsCancellationRequested) { throw OverTime(sample.Count, sample.Count); }
        }
        return new Result(sample.Count, entries, reduced, errors);

        long Keep(IReadOnlyList<string> json, int documents)
        {
            var bytes = json.Sum(j => (long)j.Length * sizeof(char));
            if (kept + bytes > MaxEntryBytes)
                throw new IndexDefinitionException(ErrorKind.OverBudget,
                    $"the trial's entries grew past {MaxEntryBytes / (1024 * 1024)} MiB after {documents:N0} of {sample.Count:N0} documents: try a smaller sampleSize, or maps that emit less");
            return bytes;
        }
    }

    private static IndexDefinitionException OverTime(int done, int of) =>
        new(ErrorKind.OverBudget, $"the trial ran out of its {RunTime.TotalSeconds:N0} s after {done:N0} of {of:N0} documents: try a smaller sampleSize, or maps that finish sooner");

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
