using System.Collections.Concurrent;
using System.Text;
using RabbitMQ.Client;
using RabbitMQ.Client.Events;

namespace Magpie.Tests.Etl;

/// <summary>A message as a plain AMQP consumer sees it: body, properties and the string-valued headers.</summary>
public sealed record ReceivedMessage(string Exchange, string RoutingKey, string Body, string? MessageId, string? ContentType, string? Type,
    bool Persistent, IReadOnlyDictionary<string, string> Headers)
{
    public string Header(string name) => Headers.TryGetValue(name, out var v) ? v : throw new KeyNotFoundException($"no header {name}; have {string.Join(", ", Headers.Keys)}");
}

/// <summary>Consumes a queue with RabbitMQ.Client (manual acks after recording) and keeps everything it got.</summary>
public sealed class QueueReader : IAsyncDisposable
{
    private readonly IConnection _connection;
    private readonly IChannel _channel;
    private readonly ConcurrentQueue<ReceivedMessage> _received = new();

    private QueueReader(IConnection connection, IChannel channel) { _connection = connection; _channel = channel; }

    public IReadOnlyCollection<ReceivedMessage> Received => _received;

    /// <summary>Declares the queue (durable) bound to <paramref name="exchange"/> if given, then consumes it.</summary>
    public static async Task<QueueReader> StartAsync(string url, string queue, string? exchange = null, string exchangeType = "fanout", string routingKey = "")
    {
        var connection = await new ConnectionFactory { Uri = new Uri(url), AutomaticRecoveryEnabled = true }.CreateConnectionAsync();
        var channel = await connection.CreateChannelAsync();
        await channel.QueueDeclareAsync(queue, durable: true, exclusive: false, autoDelete: false);
        if (exchange is not null)
        {
            await channel.ExchangeDeclareAsync(exchange, exchangeType, durable: true);
            await channel.QueueBindAsync(queue, exchange, routingKey);
        }
        var reader = new QueueReader(connection, channel);
        var consumer = new AsyncEventingBasicConsumer(channel);
        consumer.ReceivedAsync += async (_, e) =>
        {
            var headers = (e.BasicProperties.Headers ?? new Dictionary<string, object?>())
                .ToDictionary(h => h.Key, h => h.Value is byte[] b ? Encoding.UTF8.GetString(b) : h.Value?.ToString() ?? "");
            reader._received.Enqueue(new ReceivedMessage(e.Exchange, e.RoutingKey, Encoding.UTF8.GetString(e.Body.Span), e.BasicProperties.MessageId,
                e.BasicProperties.ContentType, e.BasicProperties.Type, e.BasicProperties.Persistent, headers));
            await channel.BasicAckAsync(e.DeliveryTag, multiple: false);
        };
        await channel.BasicQosAsync(0, 500, false);
        await channel.BasicConsumeAsync(queue, autoAck: false, consumer);
        return reader;
    }

    public async Task<IReadOnlyCollection<ReceivedMessage>> WaitForAsync(Func<IReadOnlyCollection<ReceivedMessage>, bool> done, TimeSpan timeout)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (!done(_received))
        {
            if (DateTime.UtcNow > deadline) throw new TimeoutException($"queue did not get what the test waited for within {timeout}; {_received.Count} messages so far");
            await Task.Delay(100);
        }
        return _received;
    }

    public async ValueTask DisposeAsync()
    {
        try { await _channel.CloseAsync(); await _connection.CloseAsync(); } catch (Exception) { /* broker may be gone */ }
        _channel.Dispose();
        _connection.Dispose();
    }
}
