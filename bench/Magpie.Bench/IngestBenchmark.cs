using System.Diagnostics;
using System.Net.Http.Headers;
using Magpie.Producers;
using Magpie.Producers.Sinks;
using Magpie.Producers.Sources;

namespace Magpie.Bench;

public sealed record BenchResult(string Name, long Docs, long Bytes, TimeSpan Elapsed, IReadOnlyList<double> BatchMs)
{
    public double DocsPerSecond => Docs / Elapsed.TotalSeconds;
    public double MBPerSecond => Bytes / Elapsed.TotalSeconds / (1024 * 1024);
    public double P50 => Percentile(0.50);
    public double P99 => Percentile(0.99);

    private double Percentile(double p)
    {
        var sorted = BatchMs.Order().ToList();
        return sorted[Math.Min(sorted.Count - 1, (int)Math.Ceiling(p * sorted.Count) - 1)];
    }
}

/// <summary>
/// Both sides get the same pre-built batches of synthetic posts and the same number of concurrent clients;
/// each batch counts when it is durable (HTTP 200 from magpie / FasterLog commit covering it).
/// </summary>
public static class IngestBenchmark
{
    public static IReadOnlyList<DocumentWrite[]> Batches(long docs, int batchSize, int seed) =>
        SyntheticPosts.Generate(docs, seed).Chunk(batchSize).ToList();

    /// <summary>Batches with their <c>bulk_docs</c> bodies, serialized before a benchmark starts its clock.</summary>
    public sealed record BulkBodies(IReadOnlyList<DocumentWrite[]> Batches, IReadOnlyList<byte[]> Bodies);

    public static BulkBodies Serialize(IReadOnlyList<DocumentWrite[]> batches) => new(batches, batches.Select(b => HttpBulkSink.Serialize(b)).ToList());

    public static Task<BenchResult> HttpBulkAsync(Uri baseUrl, IReadOnlyList<DocumentWrite[]> batches, int clients) =>
        HttpBulkAsync(baseUrl, Serialize(batches), clients);

    /// <summary>POSTs the bodies (serialized up front, so the client's JSON work doesn't compete with the server inside the timing).</summary>
    public static async Task<BenchResult> HttpBulkAsync(Uri baseUrl, BulkBodies bulk, int clients)
    {
        using var http = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = clients }) { BaseAddress = baseUrl, Timeout = TimeSpan.FromMinutes(5) };
        return await RunAsync("magpie POST /bulk_docs (durable)", bulk.Batches, clients, async i =>
        {
            using var content = new ByteArrayContent(bulk.Bodies[i]);
            content.Headers.ContentType = new MediaTypeHeaderValue("application/json");
            using var response = await http.PostAsync("bulk_docs", content);
            if (!response.IsSuccessStatusCode) throw new InvalidOperationException($"bulk_docs returned {(int)response.StatusCode}: {await response.Content.ReadAsStringAsync()}");
        });
    }

    public static async Task<BenchResult> RawLogAsync(string dir, IReadOnlyList<DocumentWrite[]> batches, int clients)
    {
        using var log = new RawLog(dir);
        return await RunAsync("raw FasterLog enqueue+commit", batches, clients, i => log.AppendDurableAsync(batches[i]));
    }

    private static async Task<BenchResult> RunAsync(string name, IReadOnlyList<DocumentWrite[]> batches, int clients, Func<int, Task> send)
    {
        var latencies = new double[batches.Count];
        var next = -1;
        var watch = Stopwatch.StartNew();
        await Task.WhenAll(Enumerable.Range(0, clients).Select(_ => Task.Run(async () =>
        {
            int i;
            while ((i = Interlocked.Increment(ref next)) < batches.Count)
            {
                var started = Stopwatch.GetTimestamp();
                await send(i);
                latencies[i] = Stopwatch.GetElapsedTime(started).TotalMilliseconds;
            }
        })));
        watch.Stop();
        return new BenchResult(name, batches.Sum(b => (long)b.Length), batches.Sum(b => b.Sum(w => (long)w.Body!.Length)), watch.Elapsed, latencies);
    }
}
