using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Search;
using Magpie.Contracts.Storage;
using Magpie.Query.Rql;

namespace Magpie.Query.Subscriptions;

/// <summary>A subscription definition the registry refused (HTTP status and message).</summary>
public sealed class SubscriptionException(int status, string message) : Exception(message)
{
    public int Status { get; } = status;
}

/// <summary>
/// The subscriptions of this process, each persisted as one small file (definition and acknowledged position,
/// replaced atomically on every ack) under <c>{dataDir}/subscriptions</c>, so a restart — kill -9 included —
/// resumes from the last ack and redelivers what was not acknowledged. They follow the change feed given: the
/// change log embedded, <c>magpie.changes</c> (every partition) on a Kafka-mode query process.
/// </summary>
public sealed partial class SubscriptionRegistry
{
    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web);
    private readonly string _directory;
    private readonly IChangeFeed _feed;
    private readonly Lock _lock = new();
    private readonly Dictionary<string, Subscription> _subscriptions = new(StringComparer.Ordinal);

    private readonly IDocumentFilters _filters;
    private readonly IDocumentLookup? _documents;

    /// <param name="documents">The document store, for loads and includes (null on a Kafka-mode query process: such subscriptions are refused).</param>
    public SubscriptionRegistry(string dataDir, IChangeFeed feed, IDocumentFilters filters, IDocumentLookup? documents)
    {
        _filters = filters;
        _documents = documents;
        _directory = Path.Combine(dataDir, "subscriptions");
        _feed = feed;
        if (!Directory.Exists(_directory)) return;
        foreach (var file in Directory.GetFiles(_directory, "*.json"))
        {
            var state = JsonSerializer.Deserialize<SubscriptionState>(File.ReadAllBytes(file), Json)!;
            _subscriptions[state.Definition.Name] = Open(state);
        }
    }

    public IReadOnlyList<Subscription> All { get { lock (_lock) return [.. _subscriptions.Values.OrderBy(s => s.State.Definition.Name, StringComparer.Ordinal)]; } }

    public Subscription? Get(string name) { lock (_lock) return _subscriptions.GetValueOrDefault(name); }

    /// <summary>Creates a subscription (400 for a bad name or query, 409 when the name is taken).</summary>
    public async Task<Subscription> CreateAsync(SubscriptionDefinition definition, CancellationToken ct)
    {
        if (!NamePattern().IsMatch(definition.Name ?? ""))
            throw new SubscriptionException(400, $"'{definition.Name}' is not a valid subscription name: 1-100 letters, digits, '.', '_' or '-'");
        if (definition.LeaseSeconds is < 1 or > 3600) throw new SubscriptionException(400, "leaseSeconds must be between 1 and 3600");
        Matcher(definition.Query);
        var state = definition.StartFrom switch
        {
            null => Start(),
            { ValueKind: JsonValueKind.String } s when s.GetString() == "beginning" => Start(),
            { ValueKind: JsonValueKind.String } s when s.GetString() == "now" => await NowAsync(ct),
            { ValueKind: JsonValueKind.Number } n when n.TryGetInt64(out var etag) && etag >= 0 => Start(afterEtag: etag),
            _ => throw new SubscriptionException(400, "startFrom must be \"beginning\", \"now\" or an etag (changes after it are delivered)"),
        };
        lock (_lock)
        {
            if (_subscriptions.ContainsKey(definition.Name!)) throw new SubscriptionException(409, $"subscription '{definition.Name}' exists");
            Persist(state);
            return _subscriptions[definition.Name!] = Open(state);
        }

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
            catch (Confluent.Kafka.KafkaException e) { throw new SubscriptionException(503, $"can't read where magpie.changes ends: {e.Error.Reason}"); }
        }
    }

    public bool Delete(string name)
    {
        lock (_lock)
        {
            if (!_subscriptions.Remove(name)) return false;
            if (_tracked.Remove(name, out var tracked)) tracked.Dispose();
            File.Delete(FileOf(name));
            return true;
        }
    }

    private Subscription Open(SubscriptionState state)
    {
        var subscription = new Subscription(state, Matcher(state.Definition.Query), _feed, Persist);
        // The acknowledged position is what it resumes from: the change log keeps everything after it.
        _tracked[state.Definition.Name] = _feed.Track($"subscription {state.Definition.Name}", () => new ChangeFeedPosition(subscription.State.Position));
        return subscription;
    }

    private readonly Dictionary<string, IDisposable> _tracked = new(StringComparer.Ordinal);

    private DocumentMatcher Matcher(string query)
    {
        try { return DocumentMatcher.For(RqlParser.Parse(query ?? ""), _filters, _documents); }
        catch (RqlException e) { throw new SubscriptionException(400, $"query: {e.Message}"); }
    }

    private void Persist(SubscriptionState state) => DurableFile.Write(FileOf(state.Definition.Name), JsonSerializer.SerializeToUtf8Bytes(state, Json));

    private string FileOf(string name) =>
        Path.Combine(_directory, name + "-" + Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(name)))[..8].ToLowerInvariant() + ".json");

    [GeneratedRegex("^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]
    private static partial Regex NamePattern();
}
