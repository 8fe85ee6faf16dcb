using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Etl;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Xunit.Abstractions;

namespace Magpie.Tests.Sinks;

/// <summary>
/// A 100,000-message stream through a queue sink, with a kill -9 of magpie and a RabbitMQ restart in the middle: every message's
/// writes are in the store exactly once. Each message appends its number to one of 1,000 buckets (a JSON Patch <c>add</c> to
/// <c>/seen/-</c>, which a second application would repeat), so a message applied twice or never shows in the buckets.
/// </summary>
public sealed class SinkExactlyOnceTests(ITestOutputHelper output)
{
    private const int Messages = 100_000, Buckets = 1_000;

    [Fact]
    public async Task Every_message_is_applied_exactly_once_through_a_kill_9_and_a_broker_restart()
    {
        await using var rabbit = await RabbitMqBroker.StartOwnedAsync();
        await using var magpie = await MagpieProcess.StartAsync();
        var http = magpie.Http;
        for (var b = 0; b < Buckets; b += 500)
            Assert.True((await http.BulkPutAsync(Enumerable.Range(b, 500).Select(i => ($"buckets/{i}", """{"seen":[]}""")))).IsSuccessStatusCode);

        var published = 0;
        var publishing = Task.Run(async () =>
        {
            await using var publisher = await Publisher.OpenAsync(rabbit.Url, "stream");
            for (var start = 0; start < Messages; start += 1_000)
            {
                await Task.WhenAll(Enumerable.Range(start, 1_000).Select(n => publisher.SendAsync($$"""{"n":{{n}}}""", $"msg-{n}").AsTask()));
                Volatile.Write(ref published, start + 1_000);
            }
        });
        while (Volatile.Read(ref published) < 10_000) await Task.Delay(50);

        await http.PutConnectionAsync("rabbit", new { type = "rabbitmq", url = rabbit.Url });
        await http.PutSinkAsync("stream", new
        {
            connection = "rabbit",
            queues = new[] { "stream" },
            reconnect = new { initialDelayMs = 200, maxDelayMs = 2_000 },
            script = $$"""
                put('orders/' + this.n, { N: this.n });
                patch('buckets/' + (this.n % {{Buckets}}), [{ op: 'add', path: '/seen/-', value: this.n }]);
                """,
        });

        await UntilOrdersAsync(http, 30_000);
        magpie.Crash();
        output.WriteLine($"{DateTime.UtcNow:O} magpie killed");
        await magpie.StartAsync();

        await UntilOrdersAsync(http, 60_000);
        await rabbit.StopAsync();
        output.WriteLine($"{DateTime.UtcNow:O} RabbitMQ stopped with {await OrdersAsync(http)} orders stored");
        await http.WaitForSinkAsync("stream", s => s.GetProperty("state").GetString() == "reconnecting", TimeSpan.FromSeconds(30));
        await rabbit.RestartAsync();
        output.WriteLine($"{DateTime.UtcNow:O} RabbitMQ restarted");
        await publishing;

        var stats = await http.WaitForSinkAsync("stream", s => s.GetProperty("lag").ValueKind == JsonValueKind.Number && s.Long("lag") == 0
            && s.GetProperty("state").GetString() == "running", TimeSpan.FromMinutes(3));
        await UntilOrdersAsync(http, Messages);
        output.WriteLine($"after the restart: {stats}");

        var seen = new List<int>(Messages);
        for (var b = 0; b < Buckets; b++)
        {
            var bucket = (await (await http.GetAsync($"docs/buckets/{b}")).JsonAsync()).GetProperty("seen").EnumerateArray().Select(e => e.GetInt32()).ToList();
            Assert.True(bucket.Count == Messages / Buckets, $"bucket {b} holds {bucket.Count} numbers, {bucket.Count - bucket.Distinct().Count()} of them twice");
            seen.AddRange(bucket);
        }
        Assert.Equal(Enumerable.Range(0, Messages), seen.Order());
        Assert.Equal(Messages, await OrdersAsync(http));
    }

    private static async Task<long> OrdersAsync(HttpClient http)
    {
        var stats = await http.GetFromJsonAsync<JsonElement>("stats");
        return stats.GetProperty("collections").TryGetProperty("orders", out var n) ? n.GetInt64() : 0;
    }

    private static async Task UntilOrdersAsync(HttpClient http, long count)
    {
        var deadline = DateTime.UtcNow.AddMinutes(4);
        long stored;
        while ((stored = await OrdersAsync(http)) < count)
        {
            Assert.True(DateTime.UtcNow < deadline, $"{stored} of {count} orders stored after 4 minutes");
            await Task.Delay(100);
        }
    }
}
