using System.Text;
using Confluent.Kafka;
using Confluent.Kafka.Admin;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Messages;
using Magpie.Kafka;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.Delivery;

/// <summary>
/// Publishes to Kafka topics with an idempotent producer; key = document id (so one document's versions
/// stay in order on one partition), CloudEvents attributes as <c>ce_</c> headers. Unlike the ingest relay,
/// messages time out (30 s) so an outage shows as <c>reconnecting</c> instead of a silent stall.
/// </summary>
public sealed class KafkaTarget(EtlConnection connection, EtlTaskDefinition task, string taskName, string source) : IMessageTarget
{
    private IProducer<string, byte[]>? _producer;
    private readonly HashSet<string> _ensured = new(StringComparer.Ordinal);

    public async Task OpenAsync(IReadOnlyCollection<string> destinations, CancellationToken ct)
    {
        try
        {
            var config = KafkaClients.Producer(connection.BootstrapServers!, $"magpie-etl-{taskName}");
            config.MessageTimeoutMs = 30_000;
            foreach (var (key, value) in connection.Options ?? []) config.Set(key, value);
            _producer = KafkaClients.BuildProducer<string, byte[]>(config);
            await EnsureTopicsAsync(destinations, ct);
        }
        catch (Exception e) when (e is not OperationCanceledException || !ct.IsCancellationRequested) { throw Classify(e); }
    }

    public async Task PublishAsync(IReadOnlyList<OutgoingMessage> messages, CancellationToken ct)
    {
        var producer = _producer ?? throw new InvalidOperationException("not open");
        await EnsureTopicsAsync(messages.Select(m => m.Destination).Distinct().ToList(), ct);
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var pending = messages.Count;
        Error? failure = null;
        foreach (var m in messages)
        {
            var message = new Message<string, byte[]> { Key = m.Change.Id, Value = Encoding.UTF8.GetBytes(m.Loaded.BodyJson), Headers = [] };
            foreach (var (name, value) in CloudEvents.Attributes(m, source)) message.Headers.Add(CloudEvents.KafkaPrefix + name, Encoding.UTF8.GetBytes(value));
            message.Headers.Add("content-type", Encoding.UTF8.GetBytes(CloudEvents.JsonContentType));
            try
            {
                producer.Produce(m.Destination, message, report =>
                {
                    if (report.Error.IsError) Interlocked.CompareExchange(ref failure, report.Error, null);
                    if (Interlocked.Decrement(ref pending) == 0) done.TrySetResult();
                });
            }
            catch (Exception e) { throw Classify(e); }
        }
        if (messages.Count == 0) return;
        await done.Task.WaitAsync(ct);
        if (failure is not null) throw Classify(new KafkaException(failure));
    }

    private async Task EnsureTopicsAsync(IReadOnlyCollection<string> topics, CancellationToken ct)
    {
        if (task.SkipAutomaticDeclaration) return;
        var missing = topics.Where(t => !_ensured.Contains(t)).ToList();
        if (missing.Count == 0) return;
        await TopicAdmin.EnsureAsync(connection.BootstrapServers!, missing.Select(t => new TopicSpecification { Name = t, NumPartitions = -1, ReplicationFactor = -1 }), ct);
        _ensured.UnionWith(missing);
    }

    private static BrokerException Classify(Exception e) => e switch
    {
        BrokerException t => t,
        KafkaException { Error.Code: ErrorCode.TopicAuthorizationFailed or ErrorCode.UnknownTopicOrPart or ErrorCode.Local_UnknownTopic or ErrorCode.TopicException } k
            => new BrokerException($"Kafka refused: {k.Error.Reason}", needsUser: true, e),
        ArgumentException => new BrokerException($"bad Kafka connection options: {e.Message}", needsUser: true, e),
        KafkaException k => new BrokerException($"Kafka unavailable: {k.Error.Reason}", needsUser: false, e),
        _ => new BrokerException($"Kafka: {e.GetType().Name}: {e.Message}", needsUser: false, e),
    };

    public ValueTask DisposeAsync()
    {
        // Dispose can wait on librdkafka's threads: keep it off the caller's thread.
        var producer = _producer;
        _producer = null;
        if (producer is not null) _ = Task.Factory.StartNew(producer.Dispose, TaskCreationOptions.LongRunning);
        return ValueTask.CompletedTask;
    }
}
