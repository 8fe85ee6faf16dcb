using System.Text;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Kafka;

namespace Magpie.Producers.Sinks;

/// <summary>
/// Publishes writes to <c>magpie.documents</c> (key = id, op in the <c>magpie-op</c> header) with an
/// idempotent producer; a batch returns when Kafka acknowledged every message of it.
/// </summary>
public sealed class KafkaDocumentSink : IDocumentSink
{
    private readonly IProducer<string, byte[]> _producer;
    private readonly string _topic;

    public KafkaDocumentSink(string bootstrapServers, string topic = Topics.Documents)
    {
        _topic = topic;
        var config = KafkaClients.Producer(bootstrapServers, "magpie-produce");
        config.MessageTimeoutMs = 120_000; // a CLI should fail, not hang, when Kafka is unreachable
        _producer = KafkaClients.BuildProducer<string, byte[]>(config);
    }

    public static Task EnsureTopicsAsync(string bootstrapServers, CancellationToken ct) =>
        TopicAdmin.EnsureAsync(bootstrapServers, TopicAdmin.DefaultTopics(6, 1), ct);

    public async Task SendAsync(IReadOnlyList<DocumentWrite> batch, CancellationToken ct)
    {
        var deliveries = new Task[batch.Count];
        for (var i = 0; i < batch.Count; i++)
        {
            var w = batch[i];
            var message = new Message<string, byte[]>
            {
                Key = w.Id,
                Value = w.Body!,
                Headers = new Headers { { Topics.Headers.Op, Encoding.UTF8.GetBytes(w.Kind.ToString().ToLowerInvariant()) } },
            };
            deliveries[i] = _producer.ProduceAsync(_topic, message, ct);
        }
        await Task.WhenAll(deliveries);
    }

    public ValueTask DisposeAsync()
    {
        _producer.Flush(TimeSpan.FromSeconds(30));
        _producer.Dispose();
        return ValueTask.CompletedTask;
    }
}
