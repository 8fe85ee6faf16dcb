using Confluent.Kafka;
using DotNet.Testcontainers.Configurations;
using Magpie.Kafka;
using Magpie.Tests.Fixtures;
using Microsoft.Extensions.Logging.Abstractions;
using Npgsql;
using RabbitMQ.Client;

namespace Magpie.Tests.Deploy;

/// <summary>
/// The fixtures' Testcontainers branch for real: Kafka, RabbitMQ and PostgreSQL started as containers on podman from the
/// stand-in images (deploy/local-images.sh), each answering as the tests use it, and the brokers back on the same address
/// after a stop (as the outage tests stop them). Ryuk, Testcontainers' reaper, is off: its image is not there, and each
/// fixture removes its container on dispose.
/// </summary>
public sealed class TestcontainersOnPodmanTests
{
    [Fact]
    public async Task The_Kafka_RabbitMQ_and_PostgreSQL_fixtures_run_as_containers_on_podman()
    {
        await ContainerEngine.ImagesAsync(TimeSpan.FromMinutes(15));
        await using var engine = await ContainerEngine.StartAsync();
        TestcontainersSettings.ResourceReaperEnabled = false;

        await using (var kafka = await KafkaBroker.StartOwnedAsync(engine))
        {
            Assert.True(kafka.InContainer);
            await RoundTripAsync(kafka.BootstrapServers, "before");
            await kafka.StopAsync();
            await kafka.RestartAsync();
            await RoundTripAsync(kafka.BootstrapServers, "after");   // the topic and its first message survived the restart
        }

        await using (var rabbit = await RabbitMqBroker.StartOwnedAsync(engine))
        {
            Assert.True(rabbit.InContainer);
            await PublishAndGetAsync(rabbit.Url);
            await rabbit.StopAsync();
            await rabbit.RestartAsync();
            await PublishAndGetAsync(rabbit.Url);
        }

        await using (var postgres = await PostgresServer.StartOwnedAsync(engine))
        {
            Assert.True(postgres.InContainer);
            await using var db = new NpgsqlConnection(postgres.ConnectionString);   // postgres, no password: as the comparisons log in
            await db.OpenAsync();
            await using var cmd = new NpgsqlCommand("SELECT current_setting('server_version_num')::int / 10000, current_setting('lc_collate'), current_setting('TimeZone')", db);
            await using var row = await cmd.ExecuteReaderAsync();
            Assert.True(await row.ReadAsync());
            Assert.Equal((15, "C", "UTC"), (row.GetInt32(0), row.GetString(1), row.GetString(2)));
        }
    }

    /// <summary>Produces one message to a topic and reads the topic from its start: every message produced so far comes back.</summary>
    private static async Task RoundTripAsync(string bootstrapServers, string value)
    {
        const string topic = "containers-check";
        using (var producer = KafkaClients.BuildProducer<string, string>(KafkaClients.Producer(bootstrapServers, "containers-check")))
            await producer.ProduceAsync(topic, new Message<string, string> { Key = value, Value = value });
        using var consumer = KafkaClients.BuildConsumer<string, string>(KafkaClients.Consumer(bootstrapServers, $"containers-check-{Guid.NewGuid():N}"), NullLogger.Instance);
        consumer.Assign(new TopicPartitionOffset(topic, 0, Offset.Beginning));
        var read = new List<string>();
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (!read.Contains(value) && DateTime.UtcNow < deadline)
            if (consumer.Consume(TimeSpan.FromMilliseconds(500)) is { } m) read.Add(m.Message.Value);
        Assert.Equal(value == "before" ? ["before"] : ["before", "after"], read);
    }

    private static async Task PublishAndGetAsync(string url)
    {
        await using var connection = await new ConnectionFactory { Uri = new Uri(url) }.CreateConnectionAsync();
        await using var channel = await connection.CreateChannelAsync();
        var queue = (await channel.QueueDeclareAsync($"containers-check-{Guid.NewGuid():N}", durable: false, exclusive: true, autoDelete: true)).QueueName;
        await channel.BasicPublishAsync("", queue, "hello"u8.ToArray());
        BasicGetResult? got = null;
        for (var i = 0; i < 50 && got is null; i++)
        {
            got = await channel.BasicGetAsync(queue, autoAck: true);
            if (got is null) await Task.Delay(100);
        }
        Assert.Equal("hello", got is null ? null : System.Text.Encoding.UTF8.GetString(got.Body.Span));
    }
}
