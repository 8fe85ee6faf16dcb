using Magpie.EtlSinks.Messages;

namespace Magpie.EtlSinks.Delivery;

/// <summary>A broker connection of one task. Publishing completes only when the broker confirmed every message.</summary>
public interface IMessageTarget : IAsyncDisposable
{
    /// <summary>Connects, and declares what the task declares (unless <c>skipAutomaticDeclaration</c>).</summary>
    Task OpenAsync(IReadOnlyCollection<string> destinations, CancellationToken ct);

    Task PublishAsync(IReadOnlyList<OutgoingMessage> messages, CancellationToken ct);
}

/// <summary>
/// Publishing failed. <see cref="NeedsUser"/>: nothing will change until someone fixes the configuration or
/// the broker's topology (bad credentials, unknown exchange, type clash) → the task shows <c>failed</c>;
/// otherwise the broker is unreachable → <c>reconnecting</c>. Both are retried with back-off.
/// </summary>
public sealed class EtlTargetException(string message, bool needsUser, Exception? inner = null) : Exception(message, inner)
{
    public bool NeedsUser { get; } = needsUser;
}
