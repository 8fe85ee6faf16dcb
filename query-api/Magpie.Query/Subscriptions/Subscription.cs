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

/// <summary>
/// One subscription at run time: its matcher, the worker that holds it (a lease renewed by each of its requests), and
/// the batch handed out and not yet acknowledged — delivered again, and nothing new, until the ack moves the
/// position on. A worker silent past the lease loses the subscription; the next worker gets the unacked batch again.
/// </summary>
public sealed class Subscription(SubscriptionState state, DocumentMatcher matcher, IChangeFeed feed, Action<SubscriptionState> persist)
{
    private readonly SemaphoreSlim _gate = new(1, 1), _read = new(1, 1);
    private SubscriptionState _state = state;
    private string? _worker;
    private DateTimeOffset _leaseEnds;
    private SubscriptionBatch? _pending;

    public SubscriptionState State => _state;
    public string? Worker => LeaseHeld ? _worker : null;
    public SubscriptionBatch? Pending => _pending;
    private bool LeaseHeld => _worker is not null && DateTimeOffset.UtcNow < _leaseEnds;
    private TimeSpan Lease => TimeSpan.FromSeconds(Math.Max(1, _state.Definition.LeaseSeconds));

    /// <summary>Changes still ahead of the acknowledged position (null when the feed can't tell cheaply).</summary>
    public long? Lag() => feed.Backlog(new ChangeFeedPosition(_state.Position), _state.SeenEtag);

    /// <summary>
    /// The next batch for <paramref name="worker"/> (the unacknowledged one again if there is one), waiting up to
    /// <paramref name="wait"/> for a matching change; null when none came. Throws <see cref="SubscriptionInUseException"/>.
    /// </summary>
    public async Task<SubscriptionBatch?> NextAsync(string worker, OpeningStrategy strategy, int maxDocs, TimeSpan wait, CancellationToken ct)
    {
        var deadline = DateTimeOffset.UtcNow + wait;
        while (!await TryHoldAsync(worker, strategy, deadline, ct)) await Task.Delay(TimeSpan.FromMilliseconds(100), ct);   // WaitForFree
        // One read of the feed at a time; the wait for changes happens outside the gate, so acks and other workers get answers meanwhile.
        await _read.WaitAsync(ct);
        try
        {
            await _gate.WaitAsync(ct);
            try { if (_pending is { } p) return p; }
            finally { _gate.Release(); }
            var (items, includes, after, seen) = await ReadAsync(maxDocs, deadline - DateTimeOffset.UtcNow, ct);
            var included = items.Count > 0 ? await matcher.IncludedAsync(includes, ct) : null;
            await _gate.WaitAsync(ct);
            try
            {
                if (items.Count > 0) _pending = new SubscriptionBatch(_state.Delivered + 1, items, after!, seen) { Includes = included };
                else if (after is not null)
                {
                    // Nothing matched: skip what was read, so the next wait starts past it (nothing to ack).
                    _state = _state with { Position = new Dictionary<string, long>(after.Next), SeenEtag = Math.Max(_state.SeenEtag, seen) };
                    persist(_state);
                }
                if (_worker != worker) throw new SubscriptionInUseException($"subscription '{_state.Definition.Name}' was taken over by worker '{_worker}'");
                return _pending;
            }
            finally { _gate.Release(); }
        }
        finally { _read.Release(); }
    }

    /// <summary>True when <paramref name="worker"/> holds the lease now (taken, renewed or taken over); false to wait (WaitForFree).</summary>
    private async Task<bool> TryHoldAsync(string worker, OpeningStrategy strategy, DateTimeOffset deadline, CancellationToken ct)
    {
        await _gate.WaitAsync(ct);
        try
        {
            if (!LeaseHeld || _worker == worker || strategy == OpeningStrategy.TakeOver)
            {
                (_worker, _leaseEnds) = (worker, DateTimeOffset.UtcNow + Lease);
                return true;
            }
            if (strategy == OpeningStrategy.OpenIfFree || DateTimeOffset.UtcNow >= deadline)
                throw new SubscriptionInUseException($"subscription '{_state.Definition.Name}' is held by worker '{_worker}' (its lease ends {_leaseEnds:O})");
            return false;
        }
        finally { _gate.Release(); }
    }

    /// <summary>The worker processed batch <paramref name="batchId"/>: the position moves past it (persisted) and the next batch can come.</summary>
    public async Task AckAsync(string worker, long batchId, CancellationToken ct)
    {
        await _gate.WaitAsync(ct);
        try
        {
            if (_worker != worker && LeaseHeld) throw new SubscriptionInUseException($"worker '{worker}' does not hold subscription '{_state.Definition.Name}' (it is '{_worker}')");
            if (_worker == worker && _pending is null && batchId == _state.Delivered) return;   // acknowledged already (a client retrying an ack whose answer it lost)
            if (_worker != worker || _pending is not { } p || p.Id != batchId)
                throw new SubscriptionBatchGoneException($"batch {batchId} is not waiting for an ack from '{worker}' (the server restarted or the lease ran out): it will be delivered again");
            _leaseEnds = DateTimeOffset.UtcNow + Lease;
            _state = _state with { Position = new Dictionary<string, long>(p.After.Next), Acked = _state.Acked + p.Items.Count, Delivered = p.Id, SeenEtag = p.SeenEtag };
            persist(_state);
            _pending = null;
        }
        finally { _gate.Release(); }
    }

    /// <summary>
    /// A worker still busy with its batch keeps the subscription: the lease starts again. Throws
    /// <see cref="SubscriptionInUseException"/> when another worker has it now.
    /// </summary>
    public async Task RenewAsync(string worker, CancellationToken ct)
    {
        await _gate.WaitAsync(ct);
        try
        {
            if (_worker != worker) throw new SubscriptionInUseException($"worker '{worker}' does not hold subscription '{_state.Definition.Name}' (it is '{_worker ?? "nobody"}')");
            _leaseEnds = DateTimeOffset.UtcNow + Lease;
        }
        finally { _gate.Release(); }
    }

    /// <summary>Reads the feed from the acknowledged position until some changes match; the position after what was read.</summary>
    private async Task<(List<JsonObject> Items, List<string> Includes, ChangeFeedPosition? After, long Seen)> ReadAsync(int maxDocs, TimeSpan wait, CancellationToken ct)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(ct);
        timeout.CancelAfter(wait > TimeSpan.Zero ? wait : TimeSpan.FromMilliseconds(1));
        var items = new List<JsonObject>();
        var includes = new List<string>();
        ChangeFeedPosition? after = null;
        long seen = 0;
        try
        {
            await foreach (var batch in feed.ReadAsync(new ChangeFeedPosition(_state.Position), maxDocs, timeout.Token))
            {
                // A document changed several times within what was read goes once, as its last version (as RavenDB's do).
                var latest = new Dictionary<string, ChangeEvent>(StringComparer.Ordinal);
                foreach (var change in batch.Changes) latest[change.Id] = change;
                foreach (var change in latest.Values.OrderBy(c => c.Etag).Where(Wanted))
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
                if (items.Count > 0) break;
            }
        }
        catch (OperationCanceledException) when (!ct.IsCancellationRequested) { }
        return (items, includes, after, seen);
    }

    private bool Wanted(ChangeEvent change)
    {
        if (!string.Equals(change.Collection, matcher.Collection, StringComparison.OrdinalIgnoreCase) && matcher.Collection != AutoIndexes.AllDocs) return false;
        if (change.Etag <= _state.AfterEtag || _state.AfterTime is { } t && change.LastModified < t) return false;
        return change.Op == ChangeOp.Delete ? _state.Definition.IncludeDeletes : matcher.Matches(change);
    }
}
