using System.Diagnostics;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Producers;
using Magpie.Tests.Fixtures;
using RabbitMQ.Client;

namespace Magpie.Bench;

/// <summary>
/// Queue ETL: N synthetic ~1 KB posts already in magpie's change feed; a task publishing each whole
/// document (<c>loadToPosts(this)</c>) to a durable exchange bound to a durable queue, timed from the task's
/// creation until its confirmed position covers the last etag. The limit, in the same run, same broker,
/// same bodies: a bare RabbitMQ.Client loop with publisher confirms, persistent messages, the same window
/// of 1,024 unconfirmed messages — once with the body alone, once with the properties and CloudEvents
/// headers magpie sends. Each side also records the CPU time the broker and the publisher used, to show
/// which of them is the bottleneck.
/// </summary>
public static class EtlBenchmark
{
    private const int Window = 1024;

    /// <summary>One side's figures; CPU seconds are null when the broker is not a local process this run started.</summary>
    public sealed record Side(BenchResult Result, double? BrokerCpuSeconds, double PublisherCpuSeconds);

    public static async Task<(Side Etl, Side Bare, Side BareWithHeaders)> RunAsync(
        Uri magpie, Process magpieProcess, string rabbitUrl, Func<TimeSpan?> brokerCpu, IReadOnlyList<DocumentWrite[]> batches, string label)
    {
        var docs = batches.SelectMany(b => b).ToList();
        using var http = new HttpClient { BaseAddress = magpie, Timeout = TimeSpan.FromMinutes(5) };
        var lastEtag = 0L;
        foreach (var chunk in batches.Chunk(8))
        {
            var results = await Task.WhenAll(chunk.Select(async b =>
            {
                using var content = new ByteArrayContent(Magpie.Producers.Sinks.HttpBulkSink.Serialize(b));
                content.Headers.ContentType = new("application/json");
                using var r = await http.PostAsync("bulk_docs", content);
                r.EnsureSuccessStatusCode();
                return (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("results").EnumerateArray().Max(x => x.GetProperty("etag").GetInt64());
            }));
            lastEtag = Math.Max(lastEtag, results.Max());
        }

        var exchange = $"bench-etl-{label}";
        await DeclareAsync(rabbitUrl, exchange);
        (await http.PutAsJsonAsync($"etl/connections/bench-{label}", new { type = "rabbitmq", url = rabbitUrl })).EnsureSuccessStatusCode();
        var cpu = CpuClock.Start(brokerCpu, magpieProcess);
        var watch = Stopwatch.StartNew();
        (await http.PutAsJsonAsync($"etl/tasks/bench-{label}", new
        {
            connection = $"bench-{label}",
            transforms = new[] { new { collections = "all", script = $"loadTo('{exchange}', this);" } },
        })).EnsureSuccessStatusCode();
        JsonElement stats;
        while (true)
        {
            stats = await http.GetFromJsonAsync<JsonElement>($"etl/tasks/bench-{label}/stats");
            if (stats.GetProperty("lastProcessedEtag").GetInt64() >= lastEtag) break;
            if (stats.GetProperty("state").GetString() is "failed") throw new InvalidOperationException($"ETL task failed: {stats}");
            await Task.Delay(20);
        }
        watch.Stop();
        var etlCpu = cpu.Stop();
        Console.WriteLine($"  {label}: task time spent {stats.GetProperty("timeSpent")}");
        (await http.DeleteAsync($"etl/tasks/bench-{label}")).EnsureSuccessStatusCode();
        var bytes = docs.Sum(d => (long)d.Body!.Length);
        var etl = new Side(new BenchResult($"magpie ETL feed → RabbitMQ ({label})", stats.GetProperty("messagesSent").GetInt64(), bytes, watch.Elapsed, [0]), etlCpu.Broker, etlCpu.Publisher);

        var bodies = docs.Select(d => d.Body!).ToList();
        var bare = await BareLoopAsync(rabbitUrl, brokerCpu, $"bench-bare-{label}", bodies, withHeaders: false);
        var bareWithHeaders = await BareLoopAsync(rabbitUrl, brokerCpu, $"bench-bareh-{label}", bodies, withHeaders: true);
        return (etl, bare, bareWithHeaders);
    }

    private static async Task<Side> BareLoopAsync(string rabbitUrl, Func<TimeSpan?> brokerCpu, string exchange, IReadOnlyList<byte[]> bodies, bool withHeaders)
    {
        await DeclareAsync(rabbitUrl, exchange);
        await using var connection = await new ConnectionFactory { Uri = new Uri(rabbitUrl) }.CreateConnectionAsync();
        await using var channel = await connection.CreateChannelAsync(new CreateChannelOptions(publisherConfirmationsEnabled: true, publisherConfirmationTrackingEnabled: true));
        var properties = new BasicProperties { Persistent = true, ContentType = "application/json" };
        using var self = Process.GetCurrentProcess();
        var cpu = CpuClock.Start(brokerCpu, self);
        var watch = Stopwatch.StartNew();
        for (var i = 0; i < bodies.Count; i += Window)
        {
            var confirms = new List<Task>(Window);
            for (var j = i; j < Math.Min(i + Window, bodies.Count); j++)
                confirms.Add(channel.BasicPublishAsync(exchange, "", false, withHeaders ? CloudEventsLike(j) : properties, bodies[j]).AsTask());
            await Task.WhenAll(confirms);
        }
        watch.Stop();
        var used = cpu.Stop();
        var result = new BenchResult(withHeaders ? "bare loop, same properties + headers" : "bare RabbitMQ.Client confirms loop", bodies.Count, bodies.Sum(b => (long)b.Length), watch.Elapsed, [0]);
        return new Side(result, used.Broker, used.Publisher);
    }

    /// <summary>CPU used by the broker and by the publishing process between Start and Stop.</summary>
    private sealed class CpuClock(Func<TimeSpan?> broker, Process publisher, TimeSpan? brokerStart, TimeSpan publisherStart)
    {
        public static CpuClock Start(Func<TimeSpan?> broker, Process publisher)
        {
            publisher.Refresh();
            return new CpuClock(broker, publisher, broker(), publisher.TotalProcessorTime);
        }

        public (double? Broker, double Publisher) Stop()
        {
            publisher.Refresh();
            var brokerNow = broker();
            return (brokerNow is { } b && brokerStart is { } s ? (b - s).TotalSeconds : null, (publisher.TotalProcessorTime - publisherStart).TotalSeconds);
        }
    }

    /// <summary>Properties and headers shaped like magpie's CloudEvents (same names, similar lengths).</summary>
    private static BasicProperties CloudEventsLike(int i) => new()
    {
        Persistent = true, ContentType = "application/json", AppId = "magpie", Type = "magpie.etl.put",
        MessageId = $"posts/{i}@{i + 1}", Timestamp = new AmqpTimestamp(DateTimeOffset.UtcNow.ToUnixTimeSeconds()),
        Headers = new Dictionary<string, object?>
        {
            ["cloudEvents:specversion"] = "1.0", ["cloudEvents:id"] = $"posts/{i}@{i + 1}", ["cloudEvents:type"] = "magpie.etl.put",
            ["cloudEvents:source"] = "/magpie/etl/bench-measured", ["cloudEvents:subject"] = $"posts/{i}",
            ["cloudEvents:time"] = DateTime.UtcNow.ToString("yyyy-MM-dd'T'HH:mm:ss.fffffff'Z'"),
        },
    };

    /// <summary>A durable fanout exchange with a durable queue behind it, empty: messages are routed and stored, as an ETL consumer would have them.</summary>
    private static async Task DeclareAsync(string rabbitUrl, string exchange)
    {
        await using var connection = await new ConnectionFactory { Uri = new Uri(rabbitUrl) }.CreateConnectionAsync();
        await using var channel = await connection.CreateChannelAsync();
        await channel.ExchangeDeclareAsync(exchange, "fanout", durable: true);
        await channel.QueueDeclareAsync(exchange + "-q", durable: true, exclusive: false, autoDelete: false);
        await channel.QueuePurgeAsync(exchange + "-q");
        await channel.QueueBindAsync(exchange + "-q", exchange, "");
    }

    /// <summary>Deletes the benchmark's queues (they hold every message published).</summary>
    public static async Task CleanUpAsync(string rabbitUrl, IEnumerable<string> labels)
    {
        await using var connection = await new ConnectionFactory { Uri = new Uri(rabbitUrl) }.CreateConnectionAsync();
        await using var channel = await connection.CreateChannelAsync();
        foreach (var label in labels)
            foreach (var q in new[] { $"bench-etl-{label}-q", $"bench-bare-{label}-q", $"bench-bareh-{label}-q" })
                await channel.QueueDeleteAsync(q);
    }
}
