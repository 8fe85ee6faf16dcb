using System.Diagnostics;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Producers;

namespace Magpie.Bench;

/// <summary>
/// A partitioned store on 1, 2 or 3 ingest processes (one broker of its own per run): the same synthetic posts sent as
/// <c>/bulk_docs</c> batches spread over the nodes (any node takes any batch and forwards each partition's part to its owner,
/// as a client that knows nothing of partitions sees it), and the CPU every node spent per document. Then the takeover: one
/// node killed, the time until every partition is served again by the others.
/// </summary>
public static class PartitionedIngestBenchmark
{
    public sealed record Outcome(int Nodes, long Docs, double DocsPerSecond, double CpuMicrosPerDoc, double TakeoverSeconds, long TakeoverDocs,
        double KafkaDocsPerSecond = double.NaN, double KafkaCpuMicrosPerDoc = double.NaN);

    /// <summary>
    /// The same posts published to <c>magpie.documents</c> (keyed by id, Kafka's default placement): each node applies the messages of
    /// its own partitions, nothing is forwarded. Timed from the first message sent until the nodes applied them all.
    /// </summary>
    public static async Task<(double DocsPerSecond, double CpuMicrosPerDoc)> KafkaInputAsync(IReadOnlyList<Process> nodes, IReadOnlyList<Uri> urls, string servers,
        IReadOnlyList<DocumentWrite[]> batches)
    {
        var docs = batches.Sum(b => (long)b.Length);
        var before = await AppliedAsync(urls);
        var cpuBefore = nodes.Sum(p => p.TotalProcessorTime.TotalMilliseconds);
        var watch = Stopwatch.StartNew();
        await using (var sink = new Magpie.Producers.Sinks.KafkaDocumentSink(servers))
            foreach (var batch in batches) await sink.SendAsync(batch, CancellationToken.None);
        while (await AppliedAsync(urls) - before < docs)
        {
            if (watch.Elapsed > TimeSpan.FromMinutes(10)) throw new TimeoutException("the nodes did not apply every message in 10 minutes");
            await Task.Delay(20);
        }
        var elapsed = watch.Elapsed;
        var cpu = nodes.Sum(p => p.TotalProcessorTime.TotalMilliseconds) - cpuBefore;
        return (docs / elapsed.TotalSeconds, cpu * 1000 / docs);
    }

    private static async Task<long> AppliedAsync(IReadOnlyList<Uri> urls)
    {
        long applied = 0;
        foreach (var url in urls)
        {
            using var http = new HttpClient { BaseAddress = url };
            applied += (await http.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("input").GetProperty("applied").GetInt64();
        }
        return applied;
    }

    public static async Task<Outcome> RunAsync(IReadOnlyList<Process> nodes, IReadOnlyList<Uri> urls, IReadOnlyList<DocumentWrite[]> batches, int clients)
    {
        await AllServedAsync(urls[0], TimeSpan.FromMinutes(2));
        var perNode = Enumerable.Range(0, nodes.Count).Select(n => IngestBenchmark.Serialize(batches.Where((_, i) => i % nodes.Count == n).ToList())).ToList();
        var cpuBefore = nodes.Sum(p => p.TotalProcessorTime.TotalMilliseconds);
        var watch = Stopwatch.StartNew();
        await Task.WhenAll(perNode.Select((bulk, n) => IngestBenchmark.HttpBulkAsync(urls[n], bulk, Math.Max(1, clients / nodes.Count))));
        var elapsed = watch.Elapsed;
        var cpu = nodes.Sum(p => p.TotalProcessorTime.TotalMilliseconds) - cpuBefore;
        var docs = batches.Sum(b => (long)b.Length);
        return new Outcome(nodes.Count, docs, docs / elapsed.TotalSeconds, cpu * 1000 / docs, double.NaN, 0);
    }

    /// <summary>Kills the last node (SIGKILL) and times until every partition is served by the others, as the first node sums <c>/stats</c>.</summary>
    public static async Task<double> TakeoverAsync(IReadOnlyList<Process> nodes, IReadOnlyList<Uri> urls)
    {
        var victim = nodes[^1];
        var watch = Stopwatch.StartNew();
        victim.Kill();
        victim.WaitForExit();
        await AllServedAsync(urls[0], TimeSpan.FromMinutes(10), requireDocs: false);
        return watch.Elapsed.TotalSeconds;
    }

    public static async Task<long> DocumentsAsync(Uri url)
    {
        using var http = new HttpClient { BaseAddress = url };
        return (await http.GetFromJsonAsync<JsonElement>("stats")).GetProperty("documents").GetInt64();
    }

    private static async Task AllServedAsync(Uri url, TimeSpan within, bool requireDocs = false)
    {
        using var http = new HttpClient { BaseAddress = url, Timeout = TimeSpan.FromSeconds(30) };
        var deadline = DateTime.UtcNow + within;
        while (true)
        {
            try
            {
                var stats = await http.GetFromJsonAsync<JsonElement>("stats");
                if (stats.GetProperty("missing").GetArrayLength() == 0) return;
            }
            catch (HttpRequestException) { }
            if (DateTime.UtcNow > deadline) throw new TimeoutException($"not every partition served within {within}");
            await Task.Delay(50);
        }
    }
}
