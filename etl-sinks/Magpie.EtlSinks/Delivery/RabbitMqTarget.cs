using System.Net.Sockets;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Messages;
using RabbitMQ.Client;
using RabbitMQ.Client.Events;
using RabbitMQ.Client.Exceptions;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.Delivery;

/// <summary>
/// Publishes to RabbitMQ exchanges on one channel with publisher confirms (RabbitMQ.Client tracks them: each
/// publish completes on the broker's ack). Persistent messages; CloudEvents binary mode or the MassTransit
/// envelope. Recovery is ours, not the client's: on any failure the task drops this target, backs off,
/// opens a new one and re-publishes from its last confirmed position.
/// The client can leave a publish waiting for its confirm forever once the broker has gone
/// (rabbitmq-dotnet-client#1930), so every publish is also cut short by the connection's or channel's
/// shutdown and by <see cref="ConfirmTimeout"/>.
/// </summary>
public sealed class RabbitMqTarget(EtlConnection connection, EtlTaskDefinition task, string taskName, string source) : IMessageTarget
{
    /// <summary>A healthy broker confirms a 1,024-message chunk in milliseconds; this long without it means trouble.</summary>
    public static readonly TimeSpan ConfirmTimeout = TimeSpan.FromSeconds(20);

    private readonly CancellationTokenSource _closed = new();
    private ShutdownEventArgs? _closeReason;
    private readonly HashSet<string> _declared = new(StringComparer.Ordinal);
    private IConnection? _connection;
    private IChannel? _channel;
    private string _hostAddress = "";

    public async Task OpenAsync(IReadOnlyCollection<string> destinations, CancellationToken ct)
    {
        try
        {
            var uri = new Uri(connection.Url!);
            _hostAddress = $"rabbitmq://{uri.Host}:{(uri.Port > 0 ? uri.Port : 5672)}";
            _connection = await RabbitMqClients.ConnectAsync(connection.Url!, $"magpie-etl-{taskName}", ct);
            _connection.ConnectionShutdownAsync += (_, e) => Closed(e);
            _channel = await RabbitMqClients.ConfirmingChannelAsync(_connection, ct);
            _channel.ChannelShutdownAsync += (_, e) => Closed(e);
            if (task.SkipAutomaticDeclaration) return;
            foreach (var exchange in destinations.Concat(task.Queues?.Select(q => q.Exchange) ?? []))
                await DeclareExchangeAsync(exchange, ct);
            foreach (var q in task.Queues ?? [])
            {
                await _channel.QueueDeclareAsync(q.Name, durable: true, exclusive: false, autoDelete: false, arguments: null, cancellationToken: ct);
                await _channel.QueueBindAsync(q.Name, q.Exchange, q.RoutingKey ?? "", arguments: null, cancellationToken: ct);
            }
        }
        catch (Exception e) when (e is not OperationCanceledException || !ct.IsCancellationRequested) { throw Classify(e); }
    }

    public async Task PublishAsync(IReadOnlyList<OutgoingMessage> messages, CancellationToken ct)
    {
        var channel = _channel ?? throw new InvalidOperationException("not open");
        using var publish = CancellationTokenSource.CreateLinkedTokenSource(ct, _closed.Token);
        publish.CancelAfter(ConfirmTimeout);
        try
        {
            var confirms = new List<Task>(messages.Count);
            foreach (var m in messages)
            {
                if (!task.SkipAutomaticDeclaration && !_declared.Contains(m.Destination)) await DeclareExchangeAsync(m.Destination, publish.Token);
                var (properties, body) = Serialize(m);
                confirms.Add(channel.BasicPublishAsync(m.Destination, m.Loaded.RoutingKey ?? "", mandatory: false, properties, body, publish.Token).AsTask());
            }
            await Task.WhenAll(confirms).WaitAsync(publish.Token);
        }
        catch (Exception e) when (!ct.IsCancellationRequested)
        {
            // Cut short by our own token: say why (the broker closed us, or it stayed silent).
            if (e is OperationCanceledException) e = _closeReason is { } reason ? new AlreadyClosedException(reason) : new TimeoutException();
            throw Classify(e);
        }
    }

    private Task Closed(ShutdownEventArgs reason)
    {
        Interlocked.CompareExchange(ref _closeReason, reason, null);
        // Not inline: cancelling runs the publish's continuations, which must not run on the client's dispatch loop.
        _ = Task.Run(() => { try { _closed.Cancel(); } catch (ObjectDisposedException) { } });
        return Task.CompletedTask;
    }

    private (BasicProperties, byte[]) Serialize(OutgoingMessage m)
    {
        var properties = new BasicProperties
        {
            Persistent = true,
            AppId = "magpie",
            Type = m.CloudEventType,
            Timestamp = new AmqpTimestamp(m.Change.LastModified.ToUnixTimeSeconds()),
            Headers = CloudEvents.Attributes(m, source).ToDictionary(a => CloudEvents.AmqpPrefix + a.Key, a => (object?)a.Value),
        };
        if (task.IsMassTransit)
        {
            properties.ContentType = MassTransitEnvelope.ContentType;
            properties.MessageId = MassTransitEnvelope.MessageId(m).ToString();
            return (properties, MassTransitEnvelope.Serialize(m, _hostAddress, source));
        }
        properties.ContentType = CloudEvents.JsonContentType;
        // The AMQP property is a short string: a longer id (a long document id) goes by its hash there, whole in the cloudEvents:id header.
        properties.MessageId = ShortString(m.CloudEventId) ? m.CloudEventId : Convert.ToHexString(System.Security.Cryptography.SHA256.HashData(System.Text.Encoding.UTF8.GetBytes(m.CloudEventId))).ToLowerInvariant();
        return (properties, System.Text.Encoding.UTF8.GetBytes(m.Loaded.BodyJson));
    }

    /// <summary>
    /// Why RabbitMQ could not carry this message, or null: its exchange, routing key and type travel as AMQP short strings
    /// (255 bytes at most). Checked per message as it is made, so a document whose data makes one too long fails alone.
    /// </summary>
    public static string? Refuses(OutgoingMessage m) =>
        !ShortString(m.Destination) ? $"the exchange name is {Bytes(m.Destination):N0} bytes; RabbitMQ takes at most 255"
        : m.Loaded.RoutingKey is { } key && !ShortString(key) ? $"the routing key is {Bytes(key):N0} bytes; RabbitMQ takes at most 255"
        : !ShortString(m.CloudEventType) ? $"the message type is {Bytes(m.CloudEventType):N0} bytes; RabbitMQ takes at most 255"
        : null;

    private static int Bytes(string s) => System.Text.Encoding.UTF8.GetByteCount(s);
    private static bool ShortString(string s) => s.Length <= 85 || Bytes(s) <= 255;

    private async Task DeclareExchangeAsync(string exchange, CancellationToken ct)
    {
        if (!_declared.Add(exchange)) return;
        await _channel!.ExchangeDeclareAsync(exchange, task.ExchangeType, durable: true, autoDelete: false, arguments: null, cancellationToken: ct);
    }

    /// <summary>Broker replies that need a person (404 unknown exchange, 403 access refused, 406 declaration clash) vs. a broker that is just away.</summary>
    private static BrokerException Classify(Exception e) => RabbitMqClients.Classify(e, ConfirmTimeout);

    public async ValueTask DisposeAsync()
    {
        try { if (_channel is not null) await _channel.DisposeAsync(); } catch { /* broker already gone */ }
        try { if (_connection is not null) await _connection.DisposeAsync(); } catch { /* broker already gone */ }
        _closed.Dispose();
    }
}
