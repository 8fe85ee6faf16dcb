using System.Text;
using Confluent.Kafka;
using Confluent.Kafka.Admin;
using Magpie.Contracts;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Delivery;
using Magpie.Kafka;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// Consumes a sink's topics in consumer group <c>magpie-sink-{name}</c> (earliest offset the first time, committed offsets
/// after), committing a batch's offsets only after its writes and dead letters. Dead letters go to a topic with the reason,
/// topic, partition and offset in the headers ingest's dead letters use. Confluent's consumer blocks: receives run on a
/// pool thread each, one at a time.
/// </summary>
public sealed class KafkaSource(EtlConnection connection, QueueSinkDefinition sink, string sinkName) : IMessageSource
{
    private IConsumer<byte[]?, byte[]?>? _consumer;
    private IProducer<byte[]?, byte[]?>? _deadLetters;

    public string Group => $"magpie-sink-{sinkName}";

    public async Task OpenAsync(CancellationToken ct)
    {
        try
        {
            var servers = connection.BootstrapServers!;
            await TopicAdmin.EnsureAsync(servers, [new TopicSpecification { Name = sink.DeadLetterOf(sinkName), NumPartitions = -1, ReplicationFactor = -1 }], ct);
            var config = KafkaClients.Consumer(servers, Group);
            config.ClientId = $"magpie-sink-{sinkName}";
            // A sinks process that died holds its partitions until its session times out: 10 s, not librdkafka's 45, before another takes over.
            config.SessionTimeoutMs = 10_000;
            foreach (var (key, value) in connection.Options ?? []) config.Set(key, value);
            _consumer = KafkaClients.BuildConsumer<byte[]?, byte[]?>(config);
            _consumer.Subscribe(sink.Topics!);
            var producer = KafkaClients.Producer(servers, $"magpie-sink-{sinkName}-dlq");
            producer.MessageTimeoutMs = 30_000;
            foreach (var (key, value) in connection.Options ?? []) producer.Set(key, value);
            _deadLetters = KafkaClients.BuildProducer<byte[]?, byte[]?>(producer);
        }
        catch (Exception e) when (e is not OperationCanceledException || !ct.IsCancellationRequested) { throw Classify(e); }
    }

    public Task<IReadOnlyList<IncomingMessage>> ReceiveAsync(int max, CancellationToken ct) => Task.Run<IReadOnlyList<IncomingMessage>>(() =>
    {
        var consumer = _consumer ?? throw new InvalidOperationException("not open");
        var batch = new List<IncomingMessage>(Math.Min(max, 1024));
        var idleUntil = DateTime.UtcNow + IMessageSource.IdleWait;
        try
        {
            while (batch.Count < max)
            {
                ct.ThrowIfCancellationRequested();
                var result = consumer.Consume(batch.Count == 0 ? TimeSpan.FromMilliseconds(200) : TimeSpan.Zero);
                if (result is null)
                {
                    if (batch.Count > 0 || DateTime.UtcNow > idleUntil) break;
                    continue;
                }
                if (result.IsPartitionEOF) continue;
                batch.Add(ToIncoming(result));
            }
        }
        catch (ConsumeException e) { throw Classify(e); }
        return batch;
    }, ct);

    private static IncomingMessage ToIncoming(ConsumeResult<byte[]?, byte[]?> r)
    {
        var headers = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var h in r.Message.Headers ?? []) headers[h.Key] = Encoding.UTF8.GetString(h.GetValueBytes());
        var contentType = headers.GetValueOrDefault("content-type") ?? headers.GetValueOrDefault("Content-Type");
        string? key = null;
        if (r.Message.Key is { } k)
            try { key = new UTF8Encoding(false, throwOnInvalidBytes: true).GetString(k); } catch (DecoderFallbackException) { key = Convert.ToBase64String(k); }
        return new IncomingMessage(r.Topic, r.Message.Value ?? [], contentType, null, headers, Partition: r.Partition.Value, Offset: r.Offset.Value, Key: key);
    }

    public async Task DeadLetterAsync(IReadOnlyList<(IncomingMessage Message, string Reason)> failed, CancellationToken ct)
    {
        var producer = _deadLetters ?? throw new InvalidOperationException("not open");
        var topic = sink.DeadLetterOf(sinkName);
        try
        {
            await Task.WhenAll(failed.Select(f =>
            {
                var headers = new Headers();
                foreach (var (name, value) in f.Message.Headers) headers.Add(name, Encoding.UTF8.GetBytes(value));
                headers.Add(Topics.Headers.DeadLetterReason, Encoding.UTF8.GetBytes(f.Reason));
                headers.Add(Topics.Headers.DeadLetterTopic, Encoding.UTF8.GetBytes(f.Message.Source));
                headers.Add(Topics.Headers.DeadLetterPartition, Encoding.UTF8.GetBytes(f.Message.Partition.ToString()!));
                headers.Add(Topics.Headers.DeadLetterOffset, Encoding.UTF8.GetBytes(f.Message.Offset.ToString()!));
                var key = f.Message.Key is { } k ? Encoding.UTF8.GetBytes(k) : null;
                return producer.ProduceAsync(topic, new Message<byte[]?, byte[]?> { Key = key, Value = f.Message.Body, Headers = headers }, ct);
            }));
        }
        catch (ProduceException<byte[]?, byte[]?> e) { throw Classify(e); }
    }

    public Task AcknowledgeAsync(IReadOnlyList<IncomingMessage> batch, CancellationToken ct)
    {
        if (batch.Count == 0) return Task.CompletedTask;
        var offsets = batch.GroupBy(m => (m.Source, m.Partition!.Value))
            .Select(g => new TopicPartitionOffset(g.Key.Source, g.Key.Value, g.Max(m => m.Offset!.Value) + 1)).ToList();
        return Task.Run(() =>
        {
            try { _consumer!.Commit(offsets); }
            catch (KafkaException e) { throw Classify(e); }
        }, ct);
    }

    /// <summary>From what the consumer last heard of each partition's end (no request to the broker).</summary>
    public Task<long?> LagAsync(CancellationToken ct)
    {
        var consumer = _consumer;
        if (consumer is null || consumer.Assignment.Count == 0) return Task.FromResult<long?>(null);
        long lag = 0;
        foreach (var tp in consumer.Assignment)
        {
            var high = consumer.GetWatermarkOffsets(tp).High;
            var position = consumer.Position(tp);
            if (high == Offset.Unset) return Task.FromResult<long?>(null);
            lag += Math.Max(0, high.Value - (position == Offset.Unset ? consumer.GetWatermarkOffsets(tp).Low.Value : position.Value));
        }
        return Task.FromResult<long?>(lag);
    }

    private static BrokerException Classify(Exception e) => e switch
    {
        BrokerException t => t,
        KafkaException { Error.Code: ErrorCode.TopicAuthorizationFailed or ErrorCode.GroupAuthorizationFailed or ErrorCode.TopicException } k
            => new BrokerException($"Kafka refused: {k.Error.Reason}", needsUser: true, e),
        ArgumentException => new BrokerException($"bad Kafka connection options: {e.Message}", needsUser: true, e),
        KafkaException k => new BrokerException($"Kafka unavailable: {k.Error.Reason}", needsUser: false, e),
        _ => new BrokerException($"Kafka: {e.GetType().Name}: {e.Message}", needsUser: false, e),
    };

    public ValueTask DisposeAsync()
    {
        // Close leaves the group at once (no session timeout for the next owner); it can wait on librdkafka: off the caller's thread.
        var (consumer, producer) = (_consumer, _deadLetters);
        (_consumer, _deadLetters) = (null, null);
        _ = Task.Factory.StartNew(() =>
        {
            try { consumer?.Close(); } catch { /* broker gone */ }
            consumer?.Dispose();
            producer?.Dispose();
        }, TaskCreationOptions.LongRunning);
        return ValueTask.CompletedTask;
    }
}
