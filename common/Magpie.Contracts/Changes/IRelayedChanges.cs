namespace Magpie.Contracts.Changes;

/// <summary>
/// Kafka mode: the <c>magpie.changes</c> offsets (partition → next offset) that hold every change the store holds now, once the
/// relay has published them. A query waiting for non-stale results takes them into its target, so a write the store acknowledged
/// but the relay had not yet published is waited for, not missed. Empty: everything stored was published before, and the topic's
/// end covers it; null: not published within the timeout (the answer is then stale).
/// </summary>
public interface IRelayedChanges
{
    Task<IReadOnlyDictionary<string, long>?> EndsAsync(TimeSpan timeout, CancellationToken ct);
}
