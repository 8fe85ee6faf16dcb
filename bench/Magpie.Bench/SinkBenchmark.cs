using System.Diagnostics;
using System.Net.Http.Json;
using System.Text.Json;
using Confluent.Kafka;
using Confluent.Kafka.Admin;
using Magpie.Kafka;
using Magpie.Producers;
using RabbitMQ.Client;
using RabbitMQ.Client.Events;

namespace Magpie.Bench;

/// <summary>
/// Queue sinks: N synthetic ~1 KB posts waiting in a RabbitMQ queue (or a Kafka topic); a sink writing each as a document
/// (<c>put('posts/', this)</c>), timed from its creation until its stats count N applied. The limit, in the same run, on the
/// same broker, with the same messages waiting in a queue (topic) of their own: a bare consume loop that does nothing with a
/// message but acknowledge it — RabbitMQ.Client with the sink's prefetch (1,024) and a <c>multiple</c> ack per 512, Confluent's
/// consumer committing offsets per 512 — so the ratio is what scripting, the store's commit and the ledger cost. Both sides are
/// timed from their first message to their last (steady state: connecting and a consumer group's join are not counted).
/// </summary>
public static class SinkBenchmark
{
    private const int Batch = 512;

    public static async Task<(BenchResult Sink, BenchResult Bare)> RabbitMqAsync(Uri magpie, string rabbitUrl, IReadOnlyList<DocumentWrite> posts, string label)
    {
        var (sinkQueue, bareQueue) = ($"bench-sink-{label}", $"bench-bare-{label}");
        await using (var connection = await new ConnectionFactory { Uri = new Uri(rabbitUrl) }.CreateConnectionAsync())
        {
            await using var channel = await connection.CreateChannelAsync(new CreateChannelOptions(publisherConfirmationsEnabled: true, publisherConfirmationTrackingEnabled: true));
            foreach (var queue in new[] { sinkQueue, bareQueue })
            {
                await channel.QueueDeclareAsync(queue, durable: true, exclusive: false, autoDelete: false);
                foreach (var chunk in posts.Chunk(1_000))
                    await Task.WhenAll(chunk.Select(p => channel.BasicPublishAsync("", queue, false,
                        new BasicProperties { Persistent = true, MessageId = p.Id, ContentType = "application/json" }, p.Body!).AsTask()));
            }
        }
        var bytes = posts.Sum(p => (long)p.Body!.Length);
        var sink = await SinkAsync(magpie, $"rabbit-{label}", new { type = "rabbitmq", url = rabbitUrl }, new { queues = new[] { sinkQueue } }, posts.Count, bytes, label);

        var watch = new Stopwatch();
        await using (var connection = await new ConnectionFactory { Uri = new Uri(rabbitUrl) }.CreateConnectionAsync())
        {
            await using var channel = await connection.CreateChannelAsync();
            await channel.BasicQosAsync(0, Batch * 2, false);
            var done = new TaskCompletionSource();
            var received = 0;
            var consumer = new AsyncEventingBasicConsumer(channel);
            consumer.ReceivedAsync += async (_, d) =>
            {
                if (received == 0) watch.Start();
                if (++received % Batch == 0 || received == posts.Count) await channel.BasicAckAsync(d.DeliveryTag, multiple: true);
                if (received == posts.Count) done.TrySetResult();
            };
            await channel.BasicConsumeAsync(bareQueue, autoAck: false, consumer);
            await done.Task;
        }
        return (sink, new BenchResult("bare RabbitMQ.Client consume + ack", posts.Count, bytes, watch.Elapsed, []));
    }

    public static async Task<(BenchResult Sink, BenchResult Bare)> KafkaAsync(Uri magpie, string servers, IReadOnlyList<DocumentWrite> posts, string label)
    {
        var (sinkTopic, bareTopic) = ($"bench-sink-{label}", $"bench-bare-{label}");
        await TopicAdmin.EnsureAsync(servers, new[] { sinkTopic, bareTopic }.Select(t => new TopicSpecification { Name = t, NumPartitions = 3, ReplicationFactor = 1 }));
        using (var producer = KafkaClients.BuildProducer<string, byte[]>(KafkaClients.Producer(servers, "bench-sink")))
        {
            foreach (var topic in new[] { sinkTopic, bareTopic })
                foreach (var chunk in posts.Chunk(50_000))
                {
                    foreach (var p in chunk) producer.Produce(topic, new Message<string, byte[]> { Key = p.Id, Value = p.Body! });
                    producer.Flush(TimeSpan.FromMinutes(2));   // the client holds at most 200,000 unsent messages
                }
            producer.Flush(TimeSpan.FromMinutes(2));
        }
        var bytes = posts.Sum(p => (long)p.Body!.Length);
        var sink = await SinkAsync(magpie, $"kafka-{label}", new { type = "kafka", bootstrapServers = servers }, new { topics = new[] { sinkTopic } }, posts.Count, bytes, label);

        var watch = new Stopwatch();
        await Task.Run(() =>
        {
            using var consumer = KafkaClients.BuildConsumer<byte[], byte[]>(KafkaClients.Consumer(servers, $"bench-bare-{label}"));
            consumer.Subscribe(bareTopic);
            var received = 0;
            var last = new Dictionary<TopicPartition, Offset>();
            while (received < posts.Count)
            {
                if (consumer.Consume(TimeSpan.FromSeconds(1)) is not { IsPartitionEOF: false } r) continue;
                if (received == 0) watch.Start();
                last[r.TopicPartition] = r.Offset + 1;
                if (++received % Batch == 0 || received == posts.Count) consumer.Commit(last.Select(kv => new TopicPartitionOffset(kv.Key, kv.Value)));
            }
            consumer.Close();
        });
        return (sink, new BenchResult("bare Confluent consume + commit", posts.Count, bytes, watch.Elapsed, []));
    }

    /// <summary>Creates the sink and times it until its stats count every message applied.</summary>
    private static async Task<BenchResult> SinkAsync(Uri magpie, string connection, object connectionBody, object sources, int count, long bytes, string label)
    {
        using var http = new HttpClient { BaseAddress = magpie, Timeout = TimeSpan.FromMinutes(5) };
        (await http.PutAsJsonAsync($"etl/connections/{connection}", connectionBody)).EnsureSuccessStatusCode();
        var body = JsonSerializer.SerializeToNode(sources)!.AsObject();
        body["connection"] = connection;
        body["script"] = "put('posts/', this);";
        (await http.PutAsJsonAsync($"sinks/{connection}", body)).EnsureSuccessStatusCode();
        var watch = new Stopwatch();
        var first = 0L;
        while (true)
        {
            var stats = await http.GetFromJsonAsync<JsonElement>($"sinks/{connection}/stats");
            var applied = stats.GetProperty("messagesApplied").GetInt64();
            // From the end of the first batch seen: connecting and joining a consumer group are not the sink's throughput.
            if (applied > 0 && first == 0) { first = applied; watch.Start(); }
            if (applied >= count)
            {
                var elapsed = watch.Elapsed;
                Console.WriteLine($"{connection}: {count - first:N0} messages after the first {first:N0} in {elapsed.TotalSeconds:F1} s, time spent {stats.GetProperty("timeSpent")}");
                return new BenchResult($"magpie sink ({connection})", count - first, bytes * (count - first) / count, elapsed, []);
            }
            if (stats.GetProperty("state").GetString() is "failed" || stats.GetProperty("deadLettered").GetInt64() > 0)
                throw new InvalidOperationException($"sink {connection}: {stats}");
            await Task.Delay(10);
        }
    }
}
