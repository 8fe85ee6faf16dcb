using System.Diagnostics;
using System.Net.Http.Json;
using Magpie.Producers.Subscriptions;

namespace Magpie.Bench;

/// <summary>
/// The subscription benchmark: documents per second delivered to a <see cref="SubscriptionWorker"/> whose
/// handler acknowledges at once (every batch: long-poll request, documents read from the change log, matched,
/// serialized, sent, acked and the position persisted), over a store already holding the posts.
/// </summary>
public static class SubscriptionBenchmark
{
    public sealed record Side(string Name, int BatchSize, long Documents, TimeSpan Elapsed)
    {
        public double DocsPerSecond => Documents / Elapsed.TotalSeconds;
    }

    public static async Task<Side> RunAsync(HttpClient http, string name, string query, int batchSize, long expected)
    {
        var created = await http.PostAsJsonAsync("subscriptions", new { name, query, startFrom = "beginning" });
        if (!created.IsSuccessStatusCode) throw new InvalidOperationException(await created.Content.ReadAsStringAsync());
        var worker = new SubscriptionWorker(http, new SubscriptionWorkerOptions(name) { MaxDocsPerBatch = batchSize, WaitForDocuments = TimeSpan.FromSeconds(2) });
        long received = 0;
        using var done = new CancellationTokenSource(TimeSpan.FromMinutes(30));
        var watch = Stopwatch.StartNew();
        try
        {
            await worker.RunAsync(async (batch, _) =>
            {
                received += batch.Items.Count;
                if (received >= expected) await done.CancelAsync();
            }, done.Token);
        }
        catch (OperationCanceledException) when (received >= expected) { }
        watch.Stop();
        (await http.DeleteAsync($"subscriptions/{name}")).EnsureSuccessStatusCode();
        return new Side(name, batchSize, received, watch.Elapsed);
    }
}
