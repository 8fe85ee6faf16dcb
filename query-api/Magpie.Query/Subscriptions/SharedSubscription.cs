namespace Magpie.Query.Subscriptions;

/// <summary>A batch handed out and not yet acknowledged: what its ack moves the position to, the newest etag its read saw, how many documents it holds.</summary>
public sealed record PendingBatch(long Id, Dictionary<string, long> After, long Seen, int Count);

/// <summary>
/// Everything about a subscription that any query process may serve from: the persisted state (definition, acknowledged
/// position), the worker holding the lease and until when, and the batch handed out. <see cref="Version"/> is the store's.
/// </summary>
public sealed record SharedSubscription(SubscriptionState State, string? Worker, DateTimeOffset LeaseEnds, PendingBatch? Pending, long Version = 0)
{
    public bool LeaseHeld(DateTimeOffset now) => Worker is not null && now < LeaseEnds;
}

/// <summary>
/// Where subscriptions' shared state lives: this process's files (embedded: one process serves them) or the compacted topic
/// <c>magpie.subscriptions</c> (Kafka mode: every query replica serves every subscription). Changes are compare-and-set, so two
/// processes racing for a lease or an ack cannot both win.
/// </summary>
public interface ISubscriptionStates
{
    SharedSubscription? Current(string name);

    IReadOnlyCollection<string> Names { get; }

    /// <summary>
    /// Stores <paramref name="next"/> (null: delete) in place of <paramref name="expected"/> (null: absent) if nothing changed it
    /// meanwhile; true when it did. False: another change came first — read <see cref="Current"/> and decide again.
    /// </summary>
    Task<bool> ReplaceAsync(string name, SharedSubscription? expected, SharedSubscription? next, CancellationToken ct);
}
