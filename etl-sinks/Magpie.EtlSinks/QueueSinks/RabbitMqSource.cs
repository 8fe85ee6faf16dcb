using System.Text;
using System.Threading.Channels;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Delivery;
using RabbitMQ.Client;
using RabbitMQ.Client.Events;
using RabbitMQ.Client.Exceptions;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// Consumes a sink's queues on one channel (manual acks, a prefetch of two batches), so one <c>multiple</c> ack of a batch's last
/// delivery tag acknowledges the whole batch. Dead letters go to a durable queue through the default exchange with publisher
/// confirms, keeping the original headers and adding <c>magpie-dlq-reason</c> and <c>magpie-dlq-queue</c> (the names ingest's dead letters use). A
/// queue that does not exist is declared durable; one that does is used as it is (MassTransit declares its own).
/// Recovery is the runner's: a closed connection fails the receive, and the broker redelivers what was not acknowledged.
/// </summary>
public sealed class RabbitMqSource(EtlConnection connection, QueueSinkDefinition sink, string sinkName) : IMessageSource
{
    public const string ReasonHeader = Magpie.Contracts.Topics.Headers.DeadLetterReason;
    public const string QueueHeader = "magpie-dlq-queue";

    private readonly Channel<IncomingMessage> _inbox = Channel.CreateUnbounded<IncomingMessage>();
    private IConnection? _connection;
    private IChannel? _channel;

    public async Task OpenAsync(CancellationToken ct)
    {
        try
        {
            _connection = await RabbitMqClients.ConnectAsync(connection.Url!, $"magpie-sink-{sinkName}", ct);
            _connection.ConnectionShutdownAsync += (_, e) => Closed(e);
            foreach (var queue in sink.Queues!.Append(sink.DeadLetterOf(sinkName))) await EnsureQueueAsync(queue, ct);
            _channel = await RabbitMqClients.ConfirmingChannelAsync(_connection, ct);
            _channel.ChannelShutdownAsync += (_, e) => Closed(e);
            await _channel.BasicQosAsync(0, (ushort)Math.Min(ushort.MaxValue, sink.BatchSize * 2), global: false, ct);
            foreach (var queue in sink.Queues!)
            {
                var consumer = new AsyncEventingBasicConsumer(_channel);
                var name = queue;
                consumer.ReceivedAsync += (_, delivery) => Received(name, delivery);
                await _channel.BasicConsumeAsync(queue, autoAck: false, consumer, ct);
            }
        }
        catch (Exception e) when (e is not OperationCanceledException || !ct.IsCancellationRequested) { throw Classify(e); }
    }

    private async Task EnsureQueueAsync(string queue, CancellationToken ct)
    {
        // A passive declare that fails closes its channel: ask on a channel of its own.
        await using (var probe = await _connection!.CreateChannelAsync(cancellationToken: ct))
        {
            try
            {
                await probe.QueueDeclarePassiveAsync(queue, ct);
                return;
            }
            catch (OperationInterruptedException e) when (e.ShutdownReason?.ReplyCode == 404) { }
        }
        await using var declare = await _connection.CreateChannelAsync(cancellationToken: ct);
        await declare.QueueDeclareAsync(queue, durable: true, exclusive: false, autoDelete: false, arguments: null, cancellationToken: ct);
    }

    private Task Received(string queue, BasicDeliverEventArgs d)
    {
        var p = d.BasicProperties;
        var headers = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var (key, value) in p.Headers ?? new Dictionary<string, object?>())
            if (value is not null) headers[key] = value is byte[] bytes ? Encoding.UTF8.GetString(bytes) : value.ToString() ?? "";
        if (p.Type is { } type && !headers.ContainsKey("type")) headers["type"] = type;
        // The body is the client's buffer, valid only during this call.
        _inbox.Writer.TryWrite(new IncomingMessage(queue, d.Body.ToArray(), p.ContentType, p.MessageId, headers,
            Exchange: d.Exchange, RoutingKey: d.RoutingKey, Redelivered: d.Redelivered, DeliveryTag: d.DeliveryTag));
        return Task.CompletedTask;
    }

    private Task Closed(ShutdownEventArgs reason)
    {
        _inbox.Writer.TryComplete(new BrokerException($"RabbitMQ connection closed: {reason.ReplyCode} {reason.ReplyText}", needsUser: false));
        return Task.CompletedTask;
    }

    public async Task<IReadOnlyList<IncomingMessage>> ReceiveAsync(int max, CancellationToken ct)
    {
        using (var idle = CancellationTokenSource.CreateLinkedTokenSource(ct))
        {
            idle.CancelAfter(IMessageSource.IdleWait);
            try { if (!await _inbox.Reader.WaitToReadAsync(idle.Token)) await _inbox.Reader.Completion; }   // throws the reason it closed
            catch (OperationCanceledException) when (!ct.IsCancellationRequested) { return []; }
        }
        var batch = new List<IncomingMessage>(Math.Min(max, 1024));
        while (batch.Count < max && _inbox.Reader.TryRead(out var m)) batch.Add(m);
        return batch;
    }

    public async Task DeadLetterAsync(IReadOnlyList<(IncomingMessage Message, string Reason)> failed, CancellationToken ct)
    {
        var channel = _channel ?? throw new InvalidOperationException("not open");
        var queue = sink.DeadLetterOf(sinkName);
        var confirms = failed.Select(f =>
        {
            var headers = f.Message.Headers.ToDictionary(h => h.Key, h => (object?)h.Value);
            headers[ReasonHeader] = f.Reason;
            headers[QueueHeader] = f.Message.Source;
            var properties = new BasicProperties { Persistent = true, ContentType = f.Message.ContentType, MessageId = f.Message.MessageId, Headers = headers };
            return channel.BasicPublishAsync("", queue, mandatory: false, properties, f.Message.Body, ct).AsTask();
        }).ToList();
        try { await Task.WhenAll(confirms); }
        catch (Exception e) when (!ct.IsCancellationRequested) { throw Classify(e); }
    }

    public async Task AcknowledgeAsync(IReadOnlyList<IncomingMessage> batch, CancellationToken ct)
    {
        if (batch.Count == 0) return;
        try { await _channel!.BasicAckAsync(batch.Max(m => m.DeliveryTag), multiple: true, ct); }
        catch (Exception e) when (!ct.IsCancellationRequested) { throw Classify(e); }
    }

    public async Task<long?> LagAsync(CancellationToken ct)
    {
        long waiting = 0;
        foreach (var queue in sink.Queues!) waiting += await _channel!.MessageCountAsync(queue, ct);
        return waiting + _inbox.Reader.Count;
    }

    private static BrokerException Classify(Exception e) => RabbitMqClients.Classify(e, RabbitMqTarget.ConfirmTimeout);

    public async ValueTask DisposeAsync()
    {
        _inbox.Writer.TryComplete();
        try { if (_channel is not null) await _channel.DisposeAsync(); } catch { /* broker already gone */ }
        try { if (_connection is not null) await _connection.DisposeAsync(); } catch { /* broker already gone */ }
    }
}
