using System.Diagnostics;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Indexer;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Indexing;
using Magpie.Indexer.Lucene;
using Magpie.Indexer.Maps;
using Microsoft.Extensions.Logging.Abstractions;
using Magpie.Producers;

namespace Magpie.Bench;

/// <summary>
/// The index benchmark. One full-text index over synthetic posts (Title, Body search; Tags exact;
/// Score, CreationDate numeric/date). The pipeline side is everything a user runs: HTTP bulk writes, the
/// store, the change feed (FasterLog tail, or Kafka), the JS map in Jint, Lucene writes and commits, until
/// the index holds every document. The raw side is the limit: the same Lucene fields built in C# straight
/// from the JSON (no store, no feed, no JS), written into the same Lucene.Net IndexWriter (the engine's, in this
/// process) in the index worker's batches (<see cref="IndexerOptions.DefaultBatchSize"/>), refreshed and committed as often as it does in a
/// backlog.
/// </summary>
public static class IndexBenchmark
{
    public const string Name = "Bench/Posts";

    public static readonly IndexDefinition Definition = new()
    {
        Maps = ["map('Posts', p => ({ Title: p.Title, Body: p.Body, Tags: p.Tags, Score: p.Score, CreationDate: p.CreationDate }))"],
        Fields = new() { ["Title"] = new() { Indexing = IndexFieldOptions.Search }, ["Body"] = new() { Indexing = IndexFieldOptions.Search } },
    };

    public static async Task<(double DocsPerSecond, TimeSpan Elapsed)> RawLuceneAsync(string dir, IReadOnlyList<DocumentWrite[]> batches)
    {
        using var engine = new LuceneEngine(NullLogger.Instance);
        var index = engine.Open(dir);
        var docs = batches.SelectMany(b => b).ToList();
        var watch = Stopwatch.StartNew();
        long build = 0, write = 0, refreshingTicks = 0;
        int refreshes = 0, commits = 0;
        // The index worker's cadence in a backlog: a refresh once a second and a commit every 10 s, each beside the next writes
        // (one of each at a time), then a last refresh and commit.
        Task refreshing = Task.CompletedTask, committing = Task.CompletedTask;
        long lastRefresh = Stopwatch.GetTimestamp(), lastCommit = lastRefresh;
        foreach (var chunk in docs.Chunk(IndexerOptions.DefaultBatchSize))
        {
            var t = Stopwatch.GetTimestamp();
            // New ids: the engine adds them without a lookup of an older copy, as it does in the pipeline (KnownIds).
            var entries = chunk.Select(d => new IndexedDocument(d.Id, [EntryMapping.From(Map(d.Body!), Definition)])).ToList();
            build += Stopwatch.GetTimestamp() - t;
            t = Stopwatch.GetTimestamp();
            await index.WriteAsync([], entries);
            write += Stopwatch.GetTimestamp() - t;
            if (refreshing.IsCompleted && Stopwatch.GetElapsedTime(lastRefresh) >= IndexWorker.BacklogRefreshInterval)
            {
                await refreshing;
                (lastRefresh, refreshes) = (Stopwatch.GetTimestamp(), refreshes + 1);
                refreshing = Task.Run(async () =>
                {
                    var started = Stopwatch.GetTimestamp();
                    await index.RefreshAsync();
                    Interlocked.Add(ref refreshingTicks, Stopwatch.GetTimestamp() - started);
                });
            }
            if (committing.IsCompleted && Stopwatch.GetElapsedTime(lastCommit) >= IndexWorker.CommitInterval)
            {
                await committing;
                (lastCommit, commits) = (Stopwatch.GetTimestamp(), commits + 1);
                var last = chunk[^1].Id;
                committing = Task.Run(() => index.CommitAsync(new Dictionary<string, string> { ["n"] = last }));
            }
        }
        await refreshing;
        await committing;
        var lastStarted = Stopwatch.GetTimestamp();
        await index.RefreshAsync();
        refreshingTicks += Stopwatch.GetTimestamp() - lastStarted;
        await index.CommitAsync(new Dictionary<string, string> { ["n"] = docs[^1].Id });
        watch.Stop();
        static double S(long ticks) => ticks / (double)Stopwatch.Frequency;
        Console.WriteLine($"  raw: fields from JSON {S(build):F1} s, Lucene writes {S(write):F1} s; {refreshes + 1} refreshes ({S(refreshingTicks):F1} s in them, as the embedded index's are counted) and {commits + 1} commits beside them");
        var state = await index.StateAsync();
        index.Close();
        if (state.Entries != docs.Count) throw new InvalidOperationException($"raw index holds {state.Entries}, expected {docs.Count}");
        return (docs.Count / watch.Elapsed.TotalSeconds, watch.Elapsed);
    }

    /// <summary>What the map returns for a synthetic post, built without JS.</summary>
    private static MappedEntry Map(byte[] json)
    {
        using var d = JsonDocument.Parse(json);
        var p = d.RootElement;
        return new MappedEntry(
        [
            new("Title", p.GetProperty("Title").GetString()),
            new("Body", p.GetProperty("Body").GetString()),
            new("Tags", p.GetProperty("Tags").EnumerateArray().Select(t => (object?)t.GetString()).ToList()),
            new("Score", p.GetProperty("Score").GetDouble()),
            new("CreationDate", p.GetProperty("CreationDate").GetString()),
        ]);
    }

    /// <summary>
    /// Runs the indexing code once before the clock, as the raw side's warm-up run does for its own: an index of the same shape over
    /// the warm-up documents (collection <c>warmup</c>), built, then deleted. Without it the pipeline's first seconds of indexing ran
    /// cold: the JIT's tier-1 compiles took a fifth of the process's CPU while the posts were being sent (300k posts).
    /// </summary>
    public static async Task WarmUpIndexingAsync(HttpClient definitions, IReadOnlyList<HttpClient> indexers, long warmupDocs)
    {
        const string warm = "Bench/Warmup";
        await DefineAsync(definitions, warm, Definition with { Maps = [Definition.Maps[0].Replace("map('Posts'", "map('warmup'")] });
        await WaitIndexedAsync(indexers, warmupDocs, TimeSpan.FromMinutes(10), warm);
        (await definitions.DeleteAsync($"indexes/{warm}")).EnsureSuccessStatusCode();
    }

    /// <summary>PUT of <paramref name="definition"/> (default: this benchmark's) as <paramref name="name"/>.</summary>
    public static async Task DefineAsync(HttpClient http, string name = Name, IndexDefinition? definition = null)
    {
        var put = await http.PutAsJsonAsync($"indexes/{name}", definition ?? Definition, JsonSerializerOptions.Web);
        if (!put.IsSuccessStatusCode) throw new InvalidOperationException($"PUT index: {(int)put.StatusCode} {await put.Content.ReadAsStringAsync()}");
    }

    /// <summary>Polls the index status (on the process(es) running the indexer) until it holds <paramref name="entries"/> and is not stale.</summary>
    public static async Task WaitIndexedAsync(IEnumerable<HttpClient> indexers, long entries, TimeSpan timeout, string name = Name)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (true)
        {
            long total = 0, errors = 0;
            var stale = false;
            foreach (var http in indexers)
            {
                var s = (await http.GetFromJsonAsync<JsonElement>($"indexes/{name}")).GetProperty("status");
                total += s.GetProperty("entries").GetInt64();
                errors += s.GetProperty("errorCount").GetInt64();
                stale |= s.GetProperty("isStale").GetBoolean();
            }
            if (total == entries && !stale) return;
            // A document the map failed on (a script timeout when a GC pause outlasts it) has no entry: done all the same, and said.
            if (total + errors >= entries && total < entries && !stale)
            {
                Console.WriteLine($"  note: {name} holds {total:N0} of {entries:N0} entries; {errors} map errors (GET /indexes/{name})");
                return;
            }
            if (DateTime.UtcNow > deadline) throw new TimeoutException($"index holds {total} of {entries} after {timeout}");
            await Task.Delay(10);
        }
    }

    /// <summary>The JS map's cost per document over the index's recent batches (<c>GET /indexes/{name}/stats</c>: map ms and documents of the last 20).</summary>
    public static async Task<double> MapMicrosPerDocumentAsync(HttpClient http, string name = Name)
    {
        var batches = (await http.GetFromJsonAsync<JsonElement>($"indexes/{name}/stats")).GetProperty("recentBatches").EnumerateArray().ToList();
        var documents = batches.Sum(b => b.GetProperty("documents").GetInt32());
        return documents == 0 ? 0 : batches.Sum(b => b.GetProperty("mapMs").GetDouble()) * 1000 / documents;
    }

    /// <summary>
    /// The refreshes (with the time spent in them) and the batches an index's workers have made so far, summed over the shards of
    /// the process asked, as one line: more frequent refreshes flush smaller segments, which cost more to write and to merge.
    /// </summary>
    public static async Task<string> RefreshesAsync(HttpClient http, string name = Name)
    {
        var stats = await http.GetFromJsonAsync<JsonElement>($"indexes/{name}/stats");
        return $"{stats.GetProperty("refreshes").GetInt64():N0} refreshes ({stats.GetProperty("refreshMs").GetDouble() / 1000:F1} s in them), " +
            $"{stats.GetProperty("batches").GetInt64():N0} batches";
    }

    /// <summary>
    /// Freshness at a given write rate: background writers keep <paramref name="docsPerSecond"/> flowing in
    /// bulk batches; every 100 ms one probe document with a unique tag is written, and the time from its
    /// acknowledgement to the first query that finds it is one sample; <paramref name="probed"/> hears each probe: when it was
    /// acknowledged, its sample, how long its write took to be acknowledged and how many queries looked for it. The queries
    /// follow each other at once unless <paramref name="pollInterval"/> is set (on 2 cores, back-to-back queries take CPU the
    /// refresh they wait for needs).
    /// </summary>
    public static async Task<List<double>> FreshnessAsync(HttpClient ingest, HttpClient query, double docsPerSecond, int probes,
        Action<ProbeSeen>? probed = null, TimeSpan pollInterval = default)
    {
        using var stop = new CancellationTokenSource();
        var load = Task.Run(async () =>
        {
            var n = 0L;
            var watch = Stopwatch.StartNew();
            foreach (var batch in SyntheticPostsBatches(seed: 99))
            {
                if (stop.IsCancellationRequested) break;
                var due = TimeSpan.FromSeconds(n / docsPerSecond);
                if (due > watch.Elapsed) await Task.Delay(due - watch.Elapsed);
                using var content = new ByteArrayContent(Producers.Sinks.HttpBulkSink.Serialize(batch));
                content.Headers.ContentType = new("application/json");
                (await ingest.PostAsync("bulk_docs", content)).EnsureSuccessStatusCode();
                n += batch.Length;
            }
        });
        var samples = new List<double>();
        for (var i = 0; i < probes; i++)
        {
            var tag = $"probe-{Guid.NewGuid():N}";
            var body = $$"""{"Title":"probe","Body":"probe","Tags":["{{tag}}"],"Score":0,"CreationDate":"2024-01-01T00:00:00Z"}""";
            var sent = Stopwatch.GetTimestamp();
            (await ingest.PutAsync($"docs/posts/{tag}", new StringContent(body, Encoding.UTF8, "application/json"))).EnsureSuccessStatusCode();
            var (acknowledged, acknowledgedAt) = (Stopwatch.GetTimestamp(), DateTimeOffset.UtcNow);
            var queries = 0;
            while (true)
            {
                queries++;
                var r = await query.PostAsJsonAsync("queries", new { query = $"from index '{Name}' where Tags = '{tag}'", pageSize = 1 });
                if ((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("totalResults").GetInt64() == 1) break;
                if (Stopwatch.GetElapsedTime(acknowledged) > TimeSpan.FromSeconds(30)) throw new TimeoutException($"{tag} not visible after 30 s");
                if (pollInterval > TimeSpan.Zero) await Task.Delay(pollInterval);
            }
            samples.Add(Stopwatch.GetElapsedTime(acknowledged).TotalMilliseconds);
            probed?.Invoke(new ProbeSeen(acknowledgedAt, samples[^1], Stopwatch.GetElapsedTime(sent, acknowledged).TotalMilliseconds, queries));
            await Task.Delay(100);
        }
        stop.Cancel();
        await load;
        return samples;
    }

    public sealed record BatchSeen(string At, int Documents, double ReadMs, double MapMs, double LuceneMs, double CommitMs);

    public sealed record ProbeSeen(DateTimeOffset Acknowledged, double Ms, double WriteMs, int Queries);

    /// <summary><see cref="FreshnessAsync"/>, while the index's recent batch stats are polled (every batch seen once).</summary>
    public static async Task<(List<ProbeSeen> Probes, List<BatchSeen> Batches)> FreshnessWithBatchesAsync(HttpClient http,
        double docsPerSecond, int probes, TimeSpan pollInterval = default)
    {
        var seen = new Dictionary<string, BatchSeen>();
        using var stop = new CancellationTokenSource();
        var poll = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                var stats = await http.GetFromJsonAsync<JsonElement>($"indexes/{Name}/stats");
                foreach (var b in stats.GetProperty("recentBatches").EnumerateArray())
                {
                    var at = b.GetProperty("at").GetString()!;
                    // Kept until its commit time is known (a batch's commit is filled in after it is listed).
                    seen[at] = new BatchSeen(at, b.GetProperty("documents").GetInt32(), b.GetProperty("readMs").GetDouble(), b.GetProperty("mapMs").GetDouble(),
                        b.GetProperty("luceneMs").GetDouble(), b.GetProperty("commitMs").GetDouble());
                }
                await Task.Delay(100);
            }
        });
        var probed = new List<ProbeSeen>();
        await FreshnessAsync(http, http, docsPerSecond, probes, probed.Add, pollInterval);
        stop.Cancel();
        await poll;
        return (probed, seen.Values.ToList());
    }

    private static IEnumerable<DocumentWrite[]> SyntheticPostsBatches(int seed) =>
        Producers.Sources.SyntheticPosts.Generate(long.MaxValue / 2, seed, firstId: 50_000_000).Chunk(64);

    /// <summary><paramref name="clients"/> clients asking <paramref name="rql"/> (top 25) for <paramref name="duration"/>; latencies in ms.</summary>
    public static Task<List<double>> LatencyAsync(HttpClient query, string rql, int clients, TimeSpan duration) =>
        TimedAsync(async () => (await query.PostAsJsonAsync("queries", new { query = rql, pageSize = 25 })).EnsureSuccessStatusCode(), clients, duration);

    /// <summary><paramref name="clients"/> callers each calling <paramref name="call"/> back to back for <paramref name="duration"/>; every call's latency in ms.</summary>
    public static async Task<List<double>> TimedAsync(Func<Task> call, int clients, TimeSpan duration)
    {
        var all = new List<double>();
        var end = DateTime.UtcNow + duration;
        await Task.WhenAll(Enumerable.Range(0, clients).Select(_ => Task.Run(async () =>
        {
            var mine = new List<double>();
            while (DateTime.UtcNow < end)
            {
                var started = Stopwatch.GetTimestamp();
                await call();
                mine.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
            }
            lock (all) all.AddRange(mine);
        })));
        return all;
    }

    /// <summary>Page 1 vs a cursor page at depth <paramref name="depth"/> of the same sorted query, each asked <paramref name="times"/> times.</summary>
    public static async Task<(List<double> First, List<double> Deep)> CursorDepthAsync(HttpClient query, string rql, int depth, int times)
    {
        // The cursor at that depth, fetched once (by offset: not what we time).
        var at = await (await query.PostAsJsonAsync("queries", new { query = rql, pageSize = 1, start = depth - 1 })).Content.ReadFromJsonAsync<JsonElement>();
        var cursor = at.GetProperty("nextCursor").GetString() ?? throw new InvalidOperationException($"no result at depth {depth}");
        var first = new List<double>();
        var deep = new List<double>();
        for (var i = 0; i < times; i++)
        {
            var s = Stopwatch.GetTimestamp();
            (await query.PostAsJsonAsync("queries", new { query = rql, pageSize = 25 })).EnsureSuccessStatusCode();
            first.Add(Stopwatch.GetElapsedTime(s).TotalMilliseconds);
            s = Stopwatch.GetTimestamp();
            var r = await query.PostAsJsonAsync("queries", new { query = rql, pageSize = 25, cursor });
            r.EnsureSuccessStatusCode();
            deep.Add(Stopwatch.GetElapsedTime(s).TotalMilliseconds);
        }
        return (first, deep);
    }

    public static double Percentile(IReadOnlyList<double> values, double p)
    {
        var sorted = values.Order().ToList();
        return sorted[Math.Clamp((int)Math.Ceiling(p * sorted.Count) - 1, 0, sorted.Count - 1)];
    }
}
