using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Confluent.Kafka;
using Confluent.Kafka.Admin;
using MassTransit;
using MassTransit.Context;
using MassTransit.Serialization;
using Magpie.Kafka;
using Magpie.Tests.Etl;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Xunit.Abstractions;

namespace Magpie.Tests.Sinks;

/// <summary>
/// A queue sink on the <c>sinks</c> target of a split deployment, consuming a Kafka topic and writing through ingest's API.
/// The messages are MassTransit envelopes made by MassTransit's own serializer (its Kafka rider, MassTransit.Kafka, is not
/// served here; the rider produces exactly this serializer's bytes through Confluent's client, as this test does).
/// </summary>
[Collection(KafkaCollection.Name)]
public sealed class KafkaSinkTests(KafkaFixture kafka, ITestOutputHelper output)
{
    private const int Messages = 20_000, Buckets = 200;
    private readonly string _n = Guid.NewGuid().ToString("N")[..8];

    [Fact]
    public async Task A_sinks_process_killed_midway_applies_every_MassTransit_message_from_a_topic_exactly_once_and_dead_letters_the_poison()
    {
        var servers = kafka.Broker.BootstrapServers;
        var topic = $"orders-{_n}";
        await TopicAdmin.EnsureAsync(servers, [new TopicSpecification { Name = topic, NumPartitions = 3, ReplicationFactor = 1 }]);
        await using var ingest = await MagpieProcess.StartAsync(servers, target: "ingest");
        await using var sinks = await MagpieProcess.StartAsync(servers, target: "sinks", environment: new() { ["MAGPIE__INGESTURL"] = ingest.BaseUrl.ToString() });
        for (var b = 0; b < Buckets; b += 100)
            Assert.True((await ingest.Http.BulkPutAsync(Enumerable.Range(b, 100).Select(i => ($"buckets{_n}/{i}", """{"seen":[]}""")))).IsSuccessStatusCode);

        using (var producer = KafkaClients.BuildProducer<string, byte[]>(KafkaClients.Producer(servers, "test-masstransit")))
        {
            for (var i = 0; i < Messages; i++)
            {
                var context = new MessageSendContext<OrderPlaced>(new OrderPlaced(i, $"customer {i % 7}", i))
                {
                    MessageId = NewId.NextGuid(),
                    DestinationAddress = new Uri($"topic:{topic}"),
                };
                var body = SystemTextJsonMessageSerializer.Instance.GetMessageBody(context).GetBytes();
                producer.Produce(topic, new Message<string, byte[]>
                {
                    Key = i.ToString(), Value = body,
                    Headers = new Confluent.Kafka.Headers { { "Content-Type", Encoding.UTF8.GetBytes(SystemTextJsonMessageSerializer.JsonContentType.MediaType) } },
                });
                if (i == Messages / 2) producer.Produce(topic, new Message<string, byte[]> { Key = "poison", Value = Encoding.UTF8.GetBytes("{ not json") });
            }
            producer.Flush(TimeSpan.FromSeconds(30));
        }

        await sinks.Http.PutConnectionAsync("kafka", new { type = "kafka", bootstrapServers = servers });
        await sinks.Http.PutSinkAsync("orders", new
        {
            connection = "kafka",
            topics = new[] { topic },
            reconnect = new { initialDelayMs = 200, maxDelayMs = 2_000 },
            script = $$"""
                put('orders{{_n}}/' + this.orderId, { Customer: this.customer, Topic: message.topic, Partition: message.partition, Type: message.type });
                patch('buckets{{_n}}/' + (this.orderId % {{Buckets}}), [{ op: 'add', path: '/seen/-', value: this.orderId }]);
                """,
        });
        await UntilOrdersAsync(ingest, Messages / 3);
        sinks.Crash();
        output.WriteLine($"sinks killed with {await OrdersAsync(ingest)} orders stored");
        await sinks.StartAsync();
        await UntilOrdersAsync(ingest, Messages);
        var stats = await sinks.Http.WaitForSinkAsync("orders", s => s.GetProperty("lag").ValueKind == JsonValueKind.Number && s.Long("lag") == 0, TimeSpan.FromMinutes(1));
        output.WriteLine(stats.ToString());

        var seen = new List<int>(Messages);
        for (var b = 0; b < Buckets; b++)
        {
            var bucket = (await (await ingest.Http.GetAsync($"docs/buckets{_n}/{b}")).JsonAsync()).GetProperty("seen").EnumerateArray().Select(e => e.GetInt32()).ToList();
            Assert.True(bucket.Count == Messages / Buckets, $"bucket {b} holds {bucket.Count} numbers, {bucket.Count - bucket.Distinct().Count()} of them twice");
            seen.AddRange(bucket);
        }
        Assert.Equal(Enumerable.Range(0, Messages), seen.Order());
        var order = await (await ingest.Http.GetAsync($"docs/orders{_n}/42")).JsonAsync();
        Assert.Equal(("customer 0", topic, "urn:message:Magpie.Tests.Sinks:OrderPlaced"),
            (order.GetProperty("Customer").GetString(), order.GetProperty("Topic").GetString(), order.GetProperty("Type").GetString()));

        var poison = ReadOne(servers, "orders.dead-letters");
        Assert.Equal("poison", poison.Message.Key);
        Assert.Contains("not JSON", Encoding.UTF8.GetString(poison.Message.Headers.GetLastBytes("magpie-dlq-reason")));
        Assert.Equal(topic, Encoding.UTF8.GetString(poison.Message.Headers.GetLastBytes("magpie-dlq-topic")));
    }

    private static ConsumeResult<string, byte[]> ReadOne(string servers, string topic)
    {
        using var consumer = KafkaClients.BuildConsumer<string, byte[]>(KafkaClients.Consumer(servers, $"test-{Guid.NewGuid():N}"));
        consumer.Subscribe(topic);
        var result = consumer.Consume(TimeSpan.FromSeconds(30));
        Assert.NotNull(result);
        return result;
    }

    private async Task<long> OrdersAsync(MagpieProcess ingest)
    {
        var stats = await ingest.Http.GetFromJsonAsync<JsonElement>("stats");
        return stats.GetProperty("collections").TryGetProperty($"orders{_n}", out var n) ? n.GetInt64() : 0;
    }

    private async Task UntilOrdersAsync(MagpieProcess ingest, long count)
    {
        var deadline = DateTime.UtcNow.AddMinutes(3);
        long stored;
        while ((stored = await OrdersAsync(ingest)) < count)
        {
            Assert.True(DateTime.UtcNow < deadline, $"{stored} of {count} orders stored after 3 minutes");
            await Task.Delay(100);
        }
    }
}
