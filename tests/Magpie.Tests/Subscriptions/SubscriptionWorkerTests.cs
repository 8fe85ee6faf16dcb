using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Producers.Subscriptions;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;
using Xunit.Abstractions;

namespace Magpie.Tests.Subscriptions;

/// <summary>
/// The .NET <see cref="SubscriptionWorker"/> against real magpie processes: it runs through every matching document,
/// retries a failing handler on the same batch and rides out a kill -9 of the server; heartbeats keep a slow handler's
/// lease; TakeOver ends the other worker; in Kafka mode a query process's subscription follows magpie.changes across its
/// own kill -9.
/// </summary>
public sealed class SubscriptionWorkerTests(ITestOutputHelper output)
{
    private static readonly StackExchangeXml Xml = new(RepoPaths.StackExchangeSample);

    private static List<string> ScoredPosts(int min) => Xml.Posts.Where(p => (long)p.Attribute("Score")! >= min)
        .Select(p => "posts/" + (string)p.Attribute("Id")!).Order(StringComparer.Ordinal).ToList();

    [Fact]
    public async Task A_worker_gets_every_matching_document_retries_its_failing_handler_and_rides_out_a_server_kill_9()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        await ImportAsync(magpie);
        await CreateAsync(magpie, new { name = "scored", query = "from Posts where Score >= 3 select Title, Score" });
        var expected = ScoredPosts(3);

        var worker = new SubscriptionWorker(magpie.Http, new SubscriptionWorkerOptions("scored") { MaxDocsPerBatch = 25, RetryDelay = TimeSpan.FromMilliseconds(200) });
        var retries = new ConcurrentQueue<Exception>();
        worker.OnRetry += retries.Enqueue;
        var received = new ConcurrentQueue<SubscriptionItem>();
        var batches = new ConcurrentQueue<long>();
        var crashed = false;
        using var done = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        var run = worker.RunAsync(async (batch, ct) =>
        {
            batches.Enqueue(batch.Id);
            if (batch.Id == 2 && batches.Count(b => b == 2) == 1) throw new InvalidOperationException("the handler fails once");
            Assert.All(batch.Items, i => Assert.True(i.Document!.Value.GetProperty("Score").GetInt64() >= 3));
            foreach (var i in batch.Items) received.Enqueue(i);
            // Half way, the server goes (kill -9) and comes back; the worker keeps asking until it answers.
            if (!crashed && received.Count >= expected.Count / 2)
            {
                crashed = true;
                magpie.Crash();
                _ = Task.Run(async () => { await Task.Delay(1000); await magpie.StartAsync(); });
            }
            if (received.Select(r => r.Id).Distinct().Count() == expected.Count) await done.CancelAsync();
            await Task.CompletedTask;
        }, done.Token);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => run);

        Assert.Equal(expected, received.Select(r => r.Id).Distinct().Order(StringComparer.Ordinal));
        Assert.Equal(2, batches.Count(b => b == 2));   // the failed batch came again
        Assert.Contains(retries, e => e is InvalidOperationException);
        Assert.Contains(retries, e => e is HttpRequestException);   // the server was away
        Assert.True(crashed);
        output.WriteLine($"{received.Count} items ({received.Select(r => r.Id).Distinct().Count()} documents) in {batches.Count} deliveries, {retries.Count} retries");
    }

    [Fact]
    public async Task Heartbeats_keep_a_slow_handlers_lease_and_TakeOver_ends_the_other_worker()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var put = await magpie.Http.BulkPutAsync(Enumerable.Range(1, 60).Select(i => ($"orders/{i}", $$"""{"Total":{{i * 10}}}""")));
        Assert.True(put.IsSuccessStatusCode, await put.Content.ReadAsStringAsync());
        await CreateAsync(magpie, new { name = "orders", query = "from Orders where Total > 100", leaseSeconds = 2 });

        // Worker A holds its first batch for 5 s, over twice its 2 s lease: the heartbeats keep it.
        var firstHeld = new TaskCompletionSource();
        var release = new TaskCompletionSource();
        var aSeen = new ConcurrentQueue<string>();
        var a = new SubscriptionWorker(magpie.Http, new SubscriptionWorkerOptions("orders") { WorkerName = "A", MaxDocsPerBatch = 10 });
        var runA = a.RunAsync(async (batch, ct) =>
        {
            foreach (var i in batch.Items) aSeen.Enqueue(i.Id);
            firstHeld.TrySetResult();
            await release.Task.WaitAsync(ct);
            await Task.Delay(TimeSpan.FromMilliseconds(300), ct);
        });
        await firstHeld.Task.WaitAsync(TimeSpan.FromSeconds(30));
        await Task.Delay(TimeSpan.FromSeconds(5));
        var other = await magpie.Http.GetAsync("subscriptions/orders/next?worker=other&waitMs=0");
        Assert.Equal(HttpStatusCode.Conflict, other.StatusCode);
        var stats = await magpie.Http.GetFromJsonAsync<System.Text.Json.JsonElement>("subscriptions/orders");
        Assert.Equal("A", stats.GetProperty("worker").GetString());
        release.SetResult();

        // A keeps going until B takes over; then A's run ends with SubscriptionInUseException and B gets the rest.
        while (a.Processed < 2) await Task.Delay(50);
        var bSeen = new ConcurrentQueue<string>();
        using var bDone = new CancellationTokenSource(TimeSpan.FromMinutes(1));
        var b = new SubscriptionWorker(magpie.Http, new SubscriptionWorkerOptions("orders") { WorkerName = "B", Strategy = SubscriptionOpeningStrategy.TakeOver, MaxDocsPerBatch = 10 });
        var runB = b.RunAsync(async (batch, ct) =>
        {
            foreach (var i in batch.Items) bSeen.Enqueue(i.Id);
            if (aSeen.Concat(bSeen).Distinct().Count() == 50) await bDone.CancelAsync();
        }, bDone.Token);
        await Assert.ThrowsAsync<SubscriptionInUseException>(() => runA.WaitAsync(TimeSpan.FromSeconds(30)));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => runB);
        Assert.Equal(Enumerable.Range(11, 50).Select(i => $"orders/{i}").Order(StringComparer.Ordinal), aSeen.Concat(bSeen).Distinct().Order(StringComparer.Ordinal));
        Assert.NotEmpty(bSeen);
    }

    [Fact]
    public async Task A_missing_subscription_ends_the_run_with_a_clear_error()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var worker = new SubscriptionWorker(magpie.Http, new SubscriptionWorkerOptions("nope"));
        var e = await Assert.ThrowsAsync<SubscriptionDoesNotExistException>(() => worker.RunAsync((_, _) => Task.CompletedTask));
        Assert.Contains("nope", e.Message);
    }

    [Fact]
    public async Task In_Kafka_mode_a_query_process_subscription_follows_magpie_changes_across_its_own_kill_9()
    {
        await using var broker = await KafkaBroker.StartOwnedAsync();
        await using var ingest = await MagpieProcess.StartAsync(broker.BootstrapServers, target: "ingest");
        await using var query = await MagpieProcess.StartAsync(broker.BootstrapServers, target: "query");
        await ImportAsync(ingest);
        await CreateAsync(query, new { name = "kafka-scored", query = "from Posts where Score >= 3 select Title, Score", startFrom = "beginning" });
        // "now" starts at the end offsets of magpie.changes (asked of the broker), not at a scan of the import.
        await CreateAsync(query, new { name = "kafka-now", query = "from Posts", startFrom = "now" });
        var now = await query.Http.GetFromJsonAsync<JsonElement>("subscriptions/kafka-now");
        Assert.NotEmpty(now.GetProperty("position").EnumerateObject());
        Assert.All(now.GetProperty("position").EnumerateObject(), p => Assert.True(p.Value.GetInt64() >= 0, p.ToString()));
        var expected = ScoredPosts(3).Append("posts/kafka-late").Order(StringComparer.Ordinal).ToList();

        var worker = new SubscriptionWorker(query.Http, new SubscriptionWorkerOptions("kafka-scored")
        {
            MaxDocsPerBatch = 25, RetryDelay = TimeSpan.FromMilliseconds(200), MaxRetryDelay = TimeSpan.FromSeconds(2),
        });
        var received = new ConcurrentQueue<string>();
        var clock = Stopwatch.StartNew();
        var crashed = false;
        TimeSpan crashedAt = default, restartedAt = default, lastDelivery = default;
        var retries = 0;
        worker.OnRetry += _ => Interlocked.Increment(ref retries);
        // Generous: under a full CI run the restarted process shares two cores with every other test.
        using var done = new CancellationTokenSource(TimeSpan.FromMinutes(6));
        var run = worker.RunAsync(async (batch, ct) =>
        {
            foreach (var i in batch.Items) received.Enqueue(i.Id);
            lastDelivery = clock.Elapsed;
            if (!crashed && received.Count >= expected.Count / 2)
            {
                crashed = true;
                crashedAt = clock.Elapsed;
                query.Crash();
                _ = Task.Run(async () =>
                {
                    await query.StartAsync();
                    restartedAt = clock.Elapsed;
                    // Written while the worker is catching up: it arrives too.
                    await ingest.Http.PutAsync("docs/posts/kafka-late", HttpJson.Json("""{"Title":"late","Score":9}"""));
                });
            }
            if (received.Distinct().Count() == expected.Count) await done.CancelAsync();
            await Task.CompletedTask;
        }, done.Token);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => run);
        Assert.True(crashed);
        var missing = expected.Except(received).ToList();
        Assert.True(missing.Count == 0,
            $"{missing.Count} of {expected.Count} never delivered (first {string.Join(", ", missing.Take(5))}); crashed at {crashedAt.TotalSeconds:F0} s, " +
            $"restarted at {restartedAt.TotalSeconds:F0} s, last delivery at {lastDelivery.TotalSeconds:F0} s, {retries} retries; the subscription now: " +
            await query.Http.GetStringAsync("subscriptions/kafka-scored"));
        Assert.Equal(expected, received.Distinct().Order(StringComparer.Ordinal));
        output.WriteLine($"{received.Count} deliveries of {expected.Count} documents");

        // The one post written after "kafka-now" was created, and nothing of the import.
        var first = await query.Http.GetFromJsonAsync<JsonElement>("subscriptions/kafka-now/next?worker=w&maxDocs=100&waitMs=20000");
        Assert.Equal(["posts/kafka-late"], first.GetProperty("items").EnumerateArray().Select(i => i.GetProperty("id").GetString()));
    }

    private static async Task ImportAsync(MagpieProcess magpie)
    {
        var (exit, log) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", magpie.BaseUrl.ToString());
        Assert.True(exit == 0, log);
    }

    private static async Task CreateAsync(MagpieProcess magpie, object definition)
    {
        var r = await magpie.Http.PostAsJsonAsync("subscriptions", definition);
        Assert.True(r.StatusCode == HttpStatusCode.Created, await r.Content.ReadAsStringAsync());
    }
}
