using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using MassTransit;
using Magpie.Tests.Etl;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using RabbitMQ.Client;

namespace Magpie.Tests.Sinks;

public sealed record OrderPlaced(int OrderId, string Customer, double Total);

public sealed record OrderShipped(int OrderId, string Carrier);

public sealed record OrderCancelled(int OrderId);

/// <summary>Queue sinks of an embedded magpie consuming a real RabbitMQ: a real MassTransit bus sends, plain AMQP publishes what fails.</summary>
[Collection(RabbitMqCollection.Name)]
public sealed class RabbitMqSinkTests(RabbitMqFixture rabbit, MagpieFixture magpie) : IClassFixture<MagpieFixture>
{
    private HttpClient Http => magpie.Magpie.Http;
    private readonly string _n = Guid.NewGuid().ToString("N")[..8];

    private const string OrdersScript = """
        const id = 'orders{n}/' + this.orderId;
        switch (message.type) {
          case 'urn:message:Magpie.Tests.Sinks:OrderPlaced':
            put(id, { Customer: this.customer, Total: this.total, MessageId: message.id, Conversation: message.massTransit.conversationId, Queue: message.queue });
            break;
          case 'urn:message:Magpie.Tests.Sinks:OrderShipped':
            patch(id, [{ op: 'add', path: '/Carrier', value: this.carrier }]);
            break;
          case 'urn:message:Magpie.Tests.Sinks:OrderCancelled':
            del(id);
            break;
        }
        """;

    [Fact]
    public async Task Messages_a_MassTransit_bus_sends_become_puts_patches_and_deletes_with_the_envelope_unwrapped()
    {
        var uri = new Uri(rabbit.Broker.Url);
        var bus = Bus.Factory.CreateUsingRabbitMq(cfg => cfg.Host(uri.Host, (ushort)uri.Port, "/", h => { h.Username("guest"); h.Password("guest"); }));
        await bus.StartAsync();
        try
        {
            var queue = $"orders-{_n}";
            var endpoint = await bus.GetSendEndpoint(new Uri($"queue:{queue}"));
            var ids = Enumerable.Range(1, 20).ToDictionary(i => i, _ => NewId.NextGuid());
            foreach (var i in ids.Keys) await endpoint.Send(new OrderPlaced(i, $"customer {i}", i * 10.5), ctx => ctx.MessageId = ids[i]);
            foreach (var i in Enumerable.Range(1, 5)) await endpoint.Send(new OrderShipped(i, "DHL"));
            foreach (var i in Enumerable.Range(6, 2)) await endpoint.Send(new OrderCancelled(i));

            await Http.PutConnectionAsync($"mt{_n}", new { type = "rabbitmq", url = rabbit.Broker.Url });
            await Http.PutSinkAsync($"orders{_n}", new { connection = $"mt{_n}", queues = new[] { queue }, script = OrdersScript.Replace("{n}", _n) });
            var stats = await Http.WaitForSinkAsync($"orders{_n}", s => s.Long("messagesApplied") >= 27, TimeSpan.FromSeconds(60));
            Assert.Equal(0, stats.Long("deadLettered"));
            Assert.True("running" == stats.GetProperty("state").GetString(), stats.ToString());

            for (var i = 1; i <= 20; i++)
            {
                var r = await Http.GetAsync($"docs/orders{_n}/{i}");
                if (i is 6 or 7) { Assert.Equal(HttpStatusCode.NotFound, r.StatusCode); continue; }
                var doc = await r.JsonAsync();
                Assert.Equal($"customer {i}", doc.GetProperty("Customer").GetString());
                Assert.Equal(i * 10.5, doc.GetProperty("Total").GetDouble());
                Assert.Equal(ids[i].ToString(), doc.GetProperty("MessageId").GetString());   // MassTransit's message id, from the envelope
                Assert.Equal(queue, doc.GetProperty("Queue").GetString());
                Assert.Equal(i <= 5 ? "DHL" : null, doc.TryGetProperty("Carrier", out var c) ? c.GetString() : null);
            }
        }
        finally { await bus.StopAsync(); }
    }

    [Fact]
    public async Task Messages_that_fail_go_to_the_dead_letter_queue_with_the_reason_and_the_rest_are_written()
    {
        var queue = $"events-{_n}";
        await using var dead = await QueueReader.StartAsync(rabbit.Broker.Url, $"events{_n}.dead-letters");
        await Http.PutConnectionAsync($"r{_n}", new { type = "rabbitmq", url = rabbit.Broker.Url });
        await using (var publisher = await Publisher.OpenAsync(rabbit.Broker.Url, queue))
        {
            await publisher.SendAsync("not json at all", "m-text");
            await publisher.SendAsync("""{"id": 1, "bad": true}""", "m-throws");
            await publisher.SendAsync("""{"id": 2, "shipTo": 99}""", "m-missing");     // patches a document that does not exist
            await publisher.SendAsync("""{"id": 3}""", "m-good");
            await publisher.SendAsync("""{"id": 4, "skip": true}""", "m-skip");     // the script writes nothing: acknowledged, not an error
        }
        await Http.PutSinkAsync($"events{_n}", new
        {
            connection = $"r{_n}",
            queues = new[] { queue },
            script = $$"""
                if (this.skip) return;
                if (this.bad) throw new Error('bad event ' + this.id);
                if (this.shipTo) { patch('shipments{{_n}}/' + this.shipTo, [{ op: 'replace', path: '/Done', value: true }]); return; }
                put('events{{_n}}/', { N: this.id });
                """,
        });
        var stats = await Http.WaitForSinkAsync($"events{_n}", s => s.Long("deadLettered") >= 3 && s.Long("messagesApplied") >= 1, TimeSpan.FromSeconds(60));
        Assert.Equal((1L, 1L, 3L, 5L), (stats.Long("messagesApplied"), stats.Long("skipped"), stats.Long("deadLettered"), stats.Long("messagesReceived")));

        var letters = (await dead.WaitForAsync(r => r.Count >= 3, TimeSpan.FromSeconds(30))).ToDictionary(m => m.MessageId!);
        Assert.Contains("the message body is not JSON", letters["m-text"].Header("magpie-dlq-reason"));
        Assert.Equal("not json at all", letters["m-text"].Body);
        Assert.Contains("bad event 1", letters["m-throws"].Header("magpie-dlq-reason"));
        Assert.Contains($"patch shipments{_n}/99", letters["m-missing"].Header("magpie-dlq-reason"));
        Assert.Equal(queue, letters["m-missing"].Header("magpie-dlq-queue"));
        Assert.Equal("custom", letters["m-missing"].Header("x-app"));   // the publisher's headers are kept

        // put('events/', …) appends the message id: a redelivery writes the same document.
        Assert.Equal(3, (await (await Http.GetAsync($"docs/events{_n}/m-good")).JsonAsync()).GetProperty("N").GetInt32());
        Assert.Contains(stats.GetProperty("recentErrors").EnumerateArray(), e => e.GetProperty("messageId").GetString() == "m-throws");
        var metrics = await Http.GetStringAsync("metrics");
        Assert.Contains($"magpie_sink_messages_total{{outcome=\"dead_lettered\",sink=\"events{_n}\"}} 3", metrics.Replace("otel_scope_name=\"Magpie.Etl\",", ""));
    }

    [Fact]
    public async Task A_sink_that_cannot_work_is_refused_with_the_reason()
    {
        await Http.PutConnectionAsync($"c{_n}", new { type = "rabbitmq", url = rabbit.Broker.Url });
        await HttpJson.AssertProblem(await Http.PutAsJsonAsync($"sinks/s{_n}", new { connection = "nope", queues = new[] { "q" }, script = "put('a/1', this)" }),
            HttpStatusCode.BadRequest, "connection 'nope' does not exist");
        await HttpJson.AssertProblem(await Http.PutAsJsonAsync($"sinks/s{_n}", new { connection = $"c{_n}", topics = new[] { "t" }, script = "put('a/1', this)" }),
            HttpStatusCode.BadRequest, "consumes \"queues\", not \"topics\"");
        await HttpJson.AssertProblem(await Http.PutAsJsonAsync($"sinks/s{_n}", new { connection = $"c{_n}", queues = new[] { "q" }, script = "put('a/1', this)", batchSize = 0 }),
            HttpStatusCode.BadRequest, "\"batchSize\" must be between 1 and 4096");
        var syntax = await HttpJson.AssertProblem(await Http.PutAsJsonAsync($"sinks/s{_n}", new { connection = $"c{_n}", queues = new[] { "q" }, script = "put('a/1',\n  this" }),
            HttpStatusCode.BadRequest, "does not parse");
        Assert.Equal(2, syntax.GetProperty("line").GetInt32());
        await HttpJson.AssertProblem(await Http.GetAsync($"sinks/s{_n}/stats"), HttpStatusCode.NotFound, $"sink 's{_n}' does not exist");

        await Http.PutSinkAsync($"s{_n}", new { connection = $"c{_n}", queues = new[] { $"q{_n}" }, script = "put('a/1', this)" });
        await HttpJson.AssertProblem(await Http.DeleteAsync($"etl/connections/c{_n}"), HttpStatusCode.Conflict, $"sink s{_n}");
        Assert.Equal(HttpStatusCode.NoContent, (await Http.DeleteAsync($"sinks/s{_n}")).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await Http.DeleteAsync($"etl/connections/c{_n}")).StatusCode);
    }
}

/// <summary>Publishes to a queue through the default exchange with publisher confirms, as a plain AMQP application does.</summary>
public sealed class Publisher : IAsyncDisposable
{
    private readonly IConnection _connection;
    private readonly IChannel _channel;
    private readonly string _queue;

    private Publisher(IConnection connection, IChannel channel, string queue) => (_connection, _channel, _queue) = (connection, channel, queue);

    public static async Task<Publisher> OpenAsync(string url, string queue)
    {
        var connection = await new ConnectionFactory { Uri = new Uri(url) }.CreateConnectionAsync();
        var channel = await connection.CreateChannelAsync(new CreateChannelOptions(publisherConfirmationsEnabled: true, publisherConfirmationTrackingEnabled: true));
        await channel.QueueDeclareAsync(queue, durable: true, exclusive: false, autoDelete: false);
        return new Publisher(connection, channel, queue);
    }

    public ValueTask SendAsync(string body, string? messageId) =>
        _channel.BasicPublishAsync("", _queue, mandatory: false,
            new BasicProperties { Persistent = true, MessageId = messageId, ContentType = "application/json", Headers = new Dictionary<string, object?> { ["x-app"] = "custom" } },
            Encoding.UTF8.GetBytes(body));

    public async ValueTask DisposeAsync()
    {
        await _channel.DisposeAsync();
        await _connection.DisposeAsync();
    }
}
