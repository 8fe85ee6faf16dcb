using Magpie.EtlSinks.Messages;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.Delivery;

/// <summary>A broker connection of one task. Publishing completes only when the broker confirmed every message.</summary>
public interface IMessageTarget : IAsyncDisposable
{
    /// <summary>Connects, and declares what the task declares (unless <c>skipAutomaticDeclaration</c>).</summary>
    Task OpenAsync(IReadOnlyCollection<string> destinations, CancellationToken ct);

    Task PublishAsync(IReadOnlyList<OutgoingMessage> messages, CancellationToken ct);
}
