namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// A broker a sink consumes from. A runner opens one, takes batches, dead-letters the messages that failed (confirmed by the
/// broker) and only then acknowledges the batch. Any failure throws: the runner drops the source, backs off and opens a new
/// one, and the broker hands over again everything not acknowledged.
/// </summary>
public interface IMessageSource : IAsyncDisposable
{
    Task OpenAsync(CancellationToken ct);

    /// <summary>How long a receive waits for a first message before it returns none (so an idle sink still updates its lag).</summary>
    static readonly TimeSpan IdleWait = TimeSpan.FromSeconds(1);

    /// <summary>Waits up to <see cref="IdleWait"/> for a first message, then takes what else arrived, up to <paramref name="max"/>.</summary>
    Task<IReadOnlyList<IncomingMessage>> ReceiveAsync(int max, CancellationToken ct);

    /// <summary>Sends messages with the reason they failed to the sink's dead letters; returns once the broker confirmed them.</summary>
    Task DeadLetterAsync(IReadOnlyList<(IncomingMessage Message, string Reason)> failed, CancellationToken ct);

    /// <summary>Acknowledges (RabbitMQ) or commits the offsets of (Kafka) every message of the batch.</summary>
    Task AcknowledgeAsync(IReadOnlyList<IncomingMessage> batch, CancellationToken ct);

    /// <summary>Messages waiting in the broker for this sink (null: not known yet).</summary>
    Task<long?> LagAsync(CancellationToken ct);
}
