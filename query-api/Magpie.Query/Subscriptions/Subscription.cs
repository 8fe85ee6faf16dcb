using Magpie.Contracts;
using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Contracts.Changes;
using Magpie.Query.Rql;
using Magpie.Query.Shards;

namespace Magpie.Query.Subscriptions;

/// <summary>
/// What a user creates: <c>{ "name", "query": "from Orders where Total > 100 [select …]", "startFrom": "beginning" | "now" |
/// etag, "includeDeletes", "leaseSeconds" }</c>.
/// </summary>
public sealed record SubscriptionDefinition
{
    public string Name { get; init; } = "";
    public string Query { get; init; } = "";
    public JsonElement? StartFrom { get; init; }
    public bool IncludeDeletes { get; init; }
    public int LeaseSeconds { get; init; } = 30;
}

/// <summary>How a worker opens a subscription another worker holds (RavenDB's strategies).</summary>
public enum OpeningStrategy { OpenIfFree, TakeOver, WaitForFree }

/// <summary>What is persisted: the definition, where delivery stands (acknowledged), and what "startFrom" resolved to.</summary>
/// <remarks><c>SeenEtag</c>: the newest change read past (matching or not), for the lag.</remarks>
public sealed record SubscriptionState(SubscriptionDefinition Definition, Dictionary<string, long> Position, long AfterEtag, DateTimeOffset? AfterTime,
    long Acked, long Delivered, long SeenEtag);

/// <summary>A batch handed to a worker: its id (to ack), the documents (<c>{ "id", "etag", "document" | "deleted": true }</c>), and the position after it.</summary>
public sealed record SubscriptionBatch(long Id, IReadOnlyList<JsonObject> Items, ChangeFeedPosition After, long SeenEtag)
{
    /// <summary>The documents the items include (<c>include</c> in the query), by id; null when it includes nothing.</summary>
    public Dictionary<string, JsonElement>? Includes { get; init; }
}

/// <summary>Why a worker can't have the subscription now (HTTP 409 with this message).</summary>
public sealed class SubscriptionInUseException(string message) : Exception(message);

/// <summary>An ack for a batch no longer handed out (HTTP 410): its documents come again in the next batch.</summary>
public sealed class SubscriptionBatchGoneException(string message) : Exception(message);

/// <summary>Thrown when a subscription was deleted while a request used it (HTTP 404).</summary>
public sealed class SubscriptionGoneException(string name) : Exception($"subscription '{name}' does not exist");

/// <summary>
/// One subscription as this process serves it: its matcher, and the shared state (<see cref="ISubscriptionStates"/>) every change
/// goes through — the worker that holds it (a lease renewed by each of its requests) and the batch handed out and not yet
/// acknowledged, delivered again, and nothing new, until the ack moves the position on. A worker silent past the lease loses
/// the subscription; the next worker gets the unacked batch again. In Kafka mode the state is shared by every query process:
/// a worker may fetch from one and ack through another, and when the process that read a batch dies, another reads it again
/// from the acknowledged position and hands it out under the same batch id.
/// </summary>
public sealed class Subscription(string name, DocumentMatcher matcher, IChangeFeed feed, ISubscriptionStates states)
{
    private const int MaxAttempts = 20;
    private readonly SemaphoreSlim _read = new(1, 1);
    private SubscriptionBatch? _local;   // the batch this process read, while it is the one handed out

    private SharedSubscription Shared => states.Current(name) ?? throw new SubscriptionGoneException(name);

    public SubscriptionState State => Shared.State;
    public string? Worker => Shared is var s && s.LeaseHeld(DateTimeOffset.UtcNow) ? s.Worker : null;
    public long? PendingId => Shared.Pending?.Id;
    private TimeSpan Lease(SharedSubscription s) => TimeSpan.FromSeconds(Math.Max(1, s.State.Definition.LeaseSeconds));

    /// <summary>Changes still ahead of the acknowledged position (null when the feed can't tell cheaply).</summary>
    public long? Lag() => Shared is var s ? feed.Backlog(new ChangeFeedPosition(s.State.Position), s.State.SeenEtag) : null;

    /// <summary>
    /// The next batch for <paramref name="worker"/> (the unacknowledged one again if there is one), waiting up to
    /// <paramref name="wait"/> for a matching change; null when none came. Throws <see cref="SubscriptionInUseException"/>.
    /// </summary>
    public async Task<SubscriptionBatch?> NextAsync(string worker, OpeningStrategy strategy, int maxDocs, TimeSpan wait, CancellationToken ct)
    {
        var deadline = DateTimeOffset.UtcNow + wait;
        await Waits.UntilAsync(c => new ValueTask<bool>(TryHoldAsync(worker, strategy, deadline, c)), Timeout.InfiniteTimeSpan, ct, poll: TimeSpan.FromMilliseconds(100));   // WaitForFree
        // One read of the feed at a time; the wait for changes happens outside any lock, so acks and other workers get answers meanwhile.
        await _read.WaitAsync(ct);
        try
        {
            var held = Shared;
            if (held.Pending is { } p)
            {
                if (_local is { } mine && mine.Id == p.Id && SameAfter(mine.After.Next, p.After)) return mine;
                // Another process handed this batch out (and may be gone): read the same stretch of the feed again, up to where
                // its ack moves the position, and hand it out under the same id. Never a shorter stretch: what the ack skips
                // must have been delivered.
                var (again, againIncludes, _, _, reached) = await ReadAsync(held.State, Math.Max(maxDocs, 1024), TimeSpan.FromSeconds(5), ct, p.After);
                if (!reached) return null;   // the feed did not give the whole stretch in time: the worker asks again
                // The read may go past the stretch; what the first process read had etags up to its Seen: the rest comes again after the ack.
                again = [.. again.Where(i => (long)i["etag"]! <= p.Seen)];
                _local = new SubscriptionBatch(p.Id, again, new ChangeFeedPosition(p.After), p.Seen)
                {
                    Includes = again.Count > 0 ? await matcher.IncludedAsync(againIncludes, ct) : null,
                };
                return _local;
            }
            var (items, includes, after, seen) = await ReadAsync(held.State, maxDocs, deadline - DateTimeOffset.UtcNow, ct);
            var included = items.Count > 0 ? await matcher.IncludedAsync(includes, ct) : null;
            SubscriptionBatch? batch = null;
            await UpdateAsync(s =>
            {
                if (s.Worker != worker) throw new SubscriptionInUseException($"subscription '{name}' was taken over by worker '{s.Worker}'");
                if (!SamePosition(s.State, held.State)) return s;   // acknowledged meanwhile through another process: read again next time
                var id = s.State.Delivered + 1;
                if (items.Count > 0)
                {
                    batch = new SubscriptionBatch(id, items, after!, seen) { Includes = included };
                    return s with { Pending = new PendingBatch(id, new Dictionary<string, long>(after!.Next), seen, items.Count) };
                }
                // Nothing matched: skip what was read, so the next wait starts past it (nothing to ack).
                return after is null ? s : s with
                {
                    State = s.State with { Position = new Dictionary<string, long>(after.Next), SeenEtag = Math.Max(s.State.SeenEtag, seen) },
                    Pending = null,
                };
            }, ct);
            _local = batch;
            return batch;
        }
        finally { _read.Release(); }
    }

    /// <summary>True when <paramref name="worker"/> holds the lease now (taken, renewed or taken over); false to wait (WaitForFree).</summary>
    private async Task<bool> TryHoldAsync(string worker, OpeningStrategy strategy, DateTimeOffset deadline, CancellationToken ct)
    {
        var held = false;
        await UpdateAsync(s =>
        {
            var now = DateTimeOffset.UtcNow;
            if (!s.LeaseHeld(now) || s.Worker == worker || strategy == OpeningStrategy.TakeOver)
            {
                held = true;
                // A lease with more than half to run is not written again on every request.
                return s.Worker == worker && s.LeaseEnds - now > Lease(s) / 2 ? s : s with { Worker = worker, LeaseEnds = now + Lease(s) };
            }
            if (strategy == OpeningStrategy.OpenIfFree || now >= deadline)
                throw new SubscriptionInUseException($"subscription '{name}' is held by worker '{s.Worker}' (its lease ends {s.LeaseEnds:O})");
            held = false;
            return s;
        }, ct);
        return held;
    }

    /// <summary>The worker processed batch <paramref name="batchId"/>: the position moves past it (persisted) and the next batch can come.</summary>
    public Task AckAsync(string worker, long batchId, CancellationToken ct) => UpdateAsync(s =>
    {
        var now = DateTimeOffset.UtcNow;
        if (s.Worker != worker && s.LeaseHeld(now)) throw new SubscriptionInUseException($"worker '{worker}' does not hold subscription '{name}' (it is '{s.Worker}')");
        if (s.Worker == worker && s.Pending is null && batchId == s.State.Delivered) return s;   // acknowledged already (a client retrying an ack whose answer it lost)
        if (s.Worker != worker || s.Pending is not { } p || p.Id != batchId)
            throw new SubscriptionBatchGoneException($"batch {batchId} is not waiting for an ack from '{worker}' (the server restarted or the lease ran out): it will be delivered again");
        return s with
        {
            LeaseEnds = now + Lease(s),
            State = s.State with { Position = new Dictionary<string, long>(p.After), Acked = s.State.Acked + p.Count, Delivered = p.Id, SeenEtag = Math.Max(s.State.SeenEtag, p.Seen) },
            Pending = null,
        };
    }, ct);

    /// <summary>
    /// A worker still busy with its batch keeps the subscription: the lease starts again. Throws
    /// <see cref="SubscriptionInUseException"/> when another worker has it now.
    /// </summary>
    public Task RenewAsync(string worker, CancellationToken ct) => UpdateAsync(s => s.Worker != worker
        ? throw new SubscriptionInUseException($"worker '{worker}' does not hold subscription '{name}' (it is '{s.Worker ?? "nobody"}')")
        : s with { LeaseEnds = DateTimeOffset.UtcNow + Lease(s) }, ct);

    /// <summary>Whether <paramref name="b"/> is at <paramref name="a"/> on every partition of it (<paramref name="atLeast"/>: at or past it).</summary>
    private static bool SameAfter(IReadOnlyDictionary<string, long> a, IReadOnlyDictionary<string, long> b, bool atLeast = false) =>
        a.All(p => b.TryGetValue(p.Key, out var v) ? (atLeast ? v >= p.Value : v == p.Value) : p.Value <= 0) && (atLeast || a.Count == b.Count);

    private static bool SamePosition(SubscriptionState a, SubscriptionState b) =>
        a.Delivered == b.Delivered && a.Position.Count == b.Position.Count && a.Position.All(p => b.Position.TryGetValue(p.Key, out var v) && v == p.Value);

    /// <summary>Applies <paramref name="change"/> to the current shared state until the store takes it (another process may change it first).</summary>
    private async Task UpdateAsync(Func<SharedSubscription, SharedSubscription> change, CancellationToken ct)
    {
        for (var attempt = 0; attempt < MaxAttempts; attempt++)
        {
            var current = Shared;
            var next = change(current);
            if (ReferenceEquals(next, current) || await states.ReplaceAsync(name, current, next, ct)) return;
        }
        throw new SubscriptionInUseException($"subscription '{name}' changed {MaxAttempts} times while this request tried to change it: try again");
    }

    /// <summary>Reads the feed from the acknowledged position until some changes match; the position after what was read.</summary>
    private async Task<(List<JsonObject> Items, List<string> Includes, ChangeFeedPosition? After, long Seen)> ReadAsync(SubscriptionState state, int maxDocs, TimeSpan wait, CancellationToken ct)
    {
        var (items, includes, after, seen, _) = await ReadAsync(state, maxDocs, wait, ct, until: null);
        return (items, includes, after, seen);
    }

    /// <summary>With <paramref name="until"/>: reads on until the position passes it (everything before it read), and says whether it did.</summary>
    private async Task<(List<JsonObject> Items, List<string> Includes, ChangeFeedPosition? After, long Seen, bool Reached)> ReadAsync(SubscriptionState state, int maxDocs,
        TimeSpan wait, CancellationToken ct, Dictionary<string, long>? until)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(ct);
        timeout.CancelAfter(wait > TimeSpan.Zero ? wait : TimeSpan.FromMilliseconds(1));
        var items = new List<JsonObject>();
        var includes = new List<string>();
        ChangeFeedPosition? after = null;
        long seen = 0;
        try
        {
            await foreach (var batch in feed.ReadAsync(new ChangeFeedPosition(state.Position), maxDocs, timeout.Token))
            {
                // A document changed several times within what was read goes once, as its last version (as RavenDB's do).
                var latest = new Dictionary<string, ChangeEvent>(StringComparer.Ordinal);
                foreach (var change in batch.Changes) latest[change.Id] = change;
                foreach (var change in latest.Values.OrderBy(c => c.Etag).Where(c => Wanted(state, c)))
                {
                    if (change.Op == ChangeOp.Delete)
                    {
                        items.Add(new JsonObject { ["id"] = change.Id, ["etag"] = change.Etag, ["deleted"] = true });
                        continue;
                    }
                    var (result, included) = await matcher.ProjectAsync(change, ct);
                    items.Add(new JsonObject { ["id"] = change.Id, ["etag"] = change.Etag, ["document"] = result });
                    includes.AddRange(included);
                }
                after = batch.After;
                seen = Math.Max(Math.Max(seen, batch.SeenEtag), batch.Changes.Select(c => c.Etag).DefaultIfEmpty(0).Max());
                if (until is null ? items.Count > 0 : SameAfter(until, after.Next, atLeast: true)) break;
            }
        }
        catch (OperationCanceledException) when (!ct.IsCancellationRequested) { }
        var reached = until is null || (after is not null && SameAfter(until, after.Next, atLeast: true)) || until.All(u => state.Position.GetValueOrDefault(u.Key) >= u.Value);
        return (items, includes, after, seen, reached);
    }

    private bool Wanted(SubscriptionState state, ChangeEvent change)
    {
        if (!string.Equals(change.Collection, matcher.Collection, StringComparison.OrdinalIgnoreCase) && matcher.Collection != AutoIndexes.AllDocs) return false;
        if (change.Etag <= state.AfterEtag || state.AfterTime is { } t && change.LastModified < t) return false;
        return change.Op == ChangeOp.Delete ? state.Definition.IncludeDeletes : matcher.Matches(change);
    }
}
