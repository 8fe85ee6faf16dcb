using System.Net.Sockets;
using RabbitMQ.Client;
using RabbitMQ.Client.Exceptions;

namespace Magpie.EtlSinks.Brokers;

/// <summary>
/// A broker connection failed. <see cref="NeedsUser"/>: nothing will change until someone fixes the configuration or the
/// broker's topology (bad credentials, unknown exchange or queue, type clash) → the runner shows <c>failed</c>; otherwise the
/// broker is unreachable or dropped the connection → <c>reconnecting</c>. Both are retried with back-off.
/// </summary>
public sealed class BrokerException(string message, bool needsUser, Exception? inner = null) : Exception(message, inner)
{
    public bool NeedsUser { get; } = needsUser;
}

/// <summary>
/// The one way ETL targets and queue sinks connect to RabbitMQ (as <c>KafkaClients</c> is for Kafka): no automatic recovery
/// (the runner's supervised loop reconnects, from its own position), a 10 s heartbeat and connect timeout, a name the broker's
/// management UI shows; and the one reading of what a failure means.
/// </summary>
public static class RabbitMqClients
{
    public static Task<IConnection> ConnectAsync(string url, string clientName, CancellationToken ct) => new ConnectionFactory
    {
        Uri = new Uri(url),
        AutomaticRecoveryEnabled = false,
        TopologyRecoveryEnabled = false,
        RequestedHeartbeat = TimeSpan.FromSeconds(10),
        RequestedConnectionTimeout = TimeSpan.FromSeconds(10),
        ClientProvidedName = clientName,
    }.CreateConnectionAsync(ct);

    /// <summary>A channel whose publishes complete when the broker confirmed them.</summary>
    public static Task<IChannel> ConfirmingChannelAsync(IConnection connection, CancellationToken ct) =>
        connection.CreateChannelAsync(new CreateChannelOptions(publisherConfirmationsEnabled: true, publisherConfirmationTrackingEnabled: true), ct);

    /// <summary>What a RabbitMQ client's failure means for the runner: the user's to fix, or the broker's to come back.</summary>
    public static BrokerException Classify(Exception e, TimeSpan confirmTimeout)
    {
        if (e is BrokerException known) return known;
        // AlreadyClosedException is an OperationInterruptedException.
        var reason = (e as OperationInterruptedException)?.ShutdownReason;
        if (reason is { ReplyCode: 404 or 403 or 406 or 530 })
            return new BrokerException($"RabbitMQ refused: {reason.ReplyCode} {reason.ReplyText}", needsUser: true, e);
        if (e is BrokerUnreachableException { InnerException: AuthenticationFailureException auth })
            return new BrokerException($"RabbitMQ authentication failed: {auth.Message}", needsUser: true, e);
        if (e is UriFormatException or ArgumentException)
            return new BrokerException($"bad RabbitMQ connection string: {e.Message}", needsUser: true, e);
        var detail = e switch
        {
            BrokerUnreachableException b => $"RabbitMQ unreachable: {b.InnerException?.Message ?? b.Message}",
            PublishException p => $"RabbitMQ did not confirm message #{p.PublishSequenceNumber} ({(p.IsReturn ? "returned" : "nacked")})",
            TimeoutException => $"RabbitMQ did not confirm within {confirmTimeout.TotalSeconds:0} s",
            SocketException or IOException => $"RabbitMQ connection lost: {e.Message}",
            _ when reason is not null => $"RabbitMQ connection closed: {reason.ReplyCode} {reason.ReplyText}",
            _ => $"RabbitMQ: {e.GetType().Name}: {e.Message}",
        };
        return new BrokerException(detail, needsUser: false, e);
    }
}
