using Magpie.Contracts;
using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Search;
using Magpie.Query.Rql;

namespace Magpie.Query.Subscriptions;

/// <summary>A subscription request the registry refused: what kind of refusal, and why.</summary>
public sealed class SubscriptionException(ErrorKind kind, string message) : Exception(message)
{
    public ErrorKind Kind { get; } = kind;
}

/// <summary>
/// The subscriptions this process serves, over their shared state (<see cref="ISubscriptionStates"/>): files of this process when
/// embedded, the compacted topic <c>magpie.subscriptions</c> in Kafka mode, where every query process serves every subscription
/// (created, fetched, acknowledged or deleted through any of them). A restart — kill -9 included — resumes from the last ack and
/// redelivers what was not acknowledged. They follow the change feed given: the change log embedded, <c>magpie.changes</c> (every
/// partition) on a Kafka-mode query process.
/// </summary>
public sealed partial class SubscriptionRegistry
{
    private readonly IChangeFeed _feed;
    private readonly ISubscriptionStates _states;
    private readonly Lock _lock = new();
    private readonly Dictionary<string, (SubscriptionDefinition Definition, Subscription Subscription)> _subscriptions = new(StringComparer.Ordinal);
    private readonly Dictionary<string, IDisposable> _tracked = new(StringComparer.Ordinal);

    private readonly IDocumentFilters _filters;
    private readonly IDocumentLookup? _documents;

    /// <param name="documents">The document store, for loads and includes (null on a Kafka-mode query process: such subscriptions are refused).</param>
    public SubscriptionRegistry(ISubscriptionStates states, IChangeFeed feed, IDocumentFilters filters, IDocumentLookup? documents)
    {
        _states = states;
        _filters = filters;
        _documents = documents;
        _feed = feed;
    }

    public IReadOnlyList<Subscription> All => _states.Names.Order(StringComparer.Ordinal).Select(Get).OfType<Subscription>().ToList();

    /// <summary>The subscription as this process serves it, made when first asked for (it may have been created through another process).</summary>
    public Subscription? Get(string name)
    {
        var shared = _states.Current(name);
        lock (_lock)
        {
            if (shared is null)
            {
                Forget(name);
                return null;
            }
            // A name deleted and created again through another process is a new subscription: a new matcher.
            if (_subscriptions.TryGetValue(name, out var known) && known.Definition == shared.State.Definition) return known.Subscription;
            Forget(name);
            var subscription = new Subscription(name, Matcher(shared.State.Definition.Query), _feed, _states);
            _subscriptions[name] = (shared.State.Definition, subscription);
            // The acknowledged position is what it resumes from: the change log keeps everything after it.
            _tracked[name] = _feed.Track($"subscription {name}", () => new ChangeFeedPosition(_states.Current(name)?.State.Position ?? []));
            return subscription;
        }
    }

    private void Forget(string name)
    {
        _subscriptions.Remove(name);
        if (_tracked.Remove(name, out var tracked)) tracked.Dispose();
    }

    public const int MaxSubscriptions = 1_000;

    /// <summary>Creates a subscription (400 for a bad name or query, 409 when the name is taken or there are too many).</summary>
    public async Task<Subscription> CreateAsync(SubscriptionDefinition definition, CancellationToken ct)
    {
        if (!NamePattern().IsMatch(definition.Name ?? ""))
            throw new SubscriptionException(ErrorKind.Invalid, $"'{definition.Name}' is not a valid subscription name: 1-100 letters, digits, '.', '_' or '-'");
        if (definition.LeaseSeconds is < 1 or > 3600) throw new SubscriptionException(ErrorKind.Invalid, "leaseSeconds must be between 1 and 3600");
        // Each one holds back the change log's compaction until it reads on: a bounded number, so forgotten ones are noticed.
        if (_states.Names.Count() >= MaxSubscriptions)
            throw new SubscriptionException(ErrorKind.Conflict, $"there are {MaxSubscriptions:N0} subscriptions, the most Magpie keeps: delete ones no client reads");
        Matcher(definition.Query);
        var state = definition.StartFrom switch
        {
            null => Start(),
            { ValueKind: JsonValueKind.String } s when s.GetString() == "beginning" => Start(),
            { ValueKind: JsonValueKind.String } s when s.GetString() == "now" => await NowAsync(ct),
            { ValueKind: JsonValueKind.Number } n when n.TryGetInt64(out var etag) && etag >= 0 => Start(afterEtag: etag),
            _ => throw new SubscriptionException(ErrorKind.Invalid, "startFrom must be \"beginning\", \"now\" or an etag (changes after it are delivered)"),
        };
        if (_states.Current(definition.Name!) is not null || !await _states.ReplaceAsync(definition.Name!, null, new SharedSubscription(state, null, default, null), ct))
            throw new SubscriptionException(ErrorKind.Conflict, $"subscription '{definition.Name}' exists");
        return Get(definition.Name!) ?? throw new SubscriptionException(ErrorKind.Conflict, $"subscription '{definition.Name}' was deleted as it was created");

        SubscriptionState Start(ChangeBatch? at = null, long afterEtag = 0, DateTimeOffset? afterTime = null) =>
            new(definition, new Dictionary<string, long>((at?.After ?? ChangeFeedPosition.Beginning).Next), afterEtag, afterTime, 0, 0, at?.SeenEtag ?? 0);

        // "now" starts at the end of the feed, so the first batch does not wait for a scan of the whole history (it took
        // longer than a worker's wait under load). The time stays as a filter: in Kafka mode a write acknowledged before the
        // subscription may reach magpie.changes after it. Whole milliseconds: changes carry their time in milliseconds, so a
        // write made later in the same millisecond as the subscription must not look older than it.
        async Task<SubscriptionState> NowAsync(CancellationToken token)
        {
            var time = DateTimeOffset.FromUnixTimeMilliseconds(DateTimeOffset.UtcNow.ToUnixTimeMilliseconds());
            try { return Start(at: await _feed.EndAsync(token), afterTime: time); }
            catch (Confluent.Kafka.KafkaException e) { throw new SubscriptionException(ErrorKind.Unavailable, $"can't read where magpie.changes ends: {e.Error.Reason}"); }
        }
    }

    public async Task<bool> DeleteAsync(string name, CancellationToken ct)
    {
        for (var attempt = 0; attempt < 20; attempt++)
        {
            if (_states.Current(name) is not { } current) return false;
            if (await _states.ReplaceAsync(name, current, null, ct))
            {
                lock (_lock) Forget(name);
                return true;
            }
        }
        throw new SubscriptionException(ErrorKind.Conflict, $"subscription '{name}' kept changing while it was being deleted: try again");
    }

    private DocumentMatcher Matcher(string query)
    {
        try { return DocumentMatcher.For(RqlParser.Parse(query ?? ""), _filters, _documents); }
        catch (RqlException e) { throw new SubscriptionException(ErrorKind.Invalid, $"query: {e.Message}"); }
    }

    [GeneratedRegex("^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]
    private static partial Regex NamePattern();
}
