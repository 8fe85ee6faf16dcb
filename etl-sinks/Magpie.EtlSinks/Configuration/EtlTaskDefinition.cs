using System.Text.Json;
using System.Text.Json.Serialization;
using Magpie.EtlSinks.Tasks;

namespace Magpie.EtlSinks.Configuration;

/// <summary>
/// A queue ETL task: <c>{ "connection", "transforms": [{ "collections": […] | "all", "script" }], "disabled",
/// "format": "cloudevents" | "masstransit", "queues": [{ "name", "exchange", "routingKey" }],
/// "skipAutomaticDeclaration", "exchangeType", "reconnect": { "initialDelayMs", "maxDelayMs" } }</c>.
/// </summary>
public sealed record EtlTaskDefinition : IRunnableEntry
{
    public const string CloudEventsFormat = "cloudevents";
    public const string MassTransitFormat = "masstransit";

    public string Connection { get; init; } = "";
    public List<EtlTransform> Transforms { get; init; } = [];
    public bool Disabled { get; init; }
    public string Format { get; init; } = CloudEventsFormat;

    /// <summary>RabbitMQ: queues to declare and bind to the exchanges the scripts load to.</summary>
    public List<EtlQueue>? Queues { get; init; }
    public bool SkipAutomaticDeclaration { get; init; }

    /// <summary>RabbitMQ: type of the exchanges Magpie declares (fanout, direct, topic, headers); fanout by default, as MassTransit uses.</summary>
    public string ExchangeType { get; init; } = "fanout";

    /// <summary>CloudEvents <c>source</c>; default <c>/magpie/etl/{task}</c>.</summary>
    public string? Source { get; init; }
    public EtlReconnect Reconnect { get; init; } = new();

    public bool IsMassTransit => string.Equals(Format, MassTransitFormat, StringComparison.OrdinalIgnoreCase);

    public IEnumerable<string> Problems(EtlConnection? connection)
    {
        if (string.IsNullOrWhiteSpace(Connection)) yield return "\"connection\" names the connection string to publish to";
        else if (connection is null) yield return $"connection '{Connection}' does not exist (PUT /etl/connections/{Connection} first)";
        if (Transforms.Count == 0) yield return "\"transforms\" needs at least one { \"collections\", \"script\" }";
        for (var i = 0; i < Transforms.Count; i++)
            foreach (var p in Transforms[i].Problems()) yield return $"transforms[{i}]: {p}";
        if (!string.Equals(Format, CloudEventsFormat, StringComparison.OrdinalIgnoreCase) && !IsMassTransit)
            yield return $"\"format\" must be \"{CloudEventsFormat}\" or \"{MassTransitFormat}\", got '{Format}'";
        if (IsMassTransit && connection is { IsKafka: true })
            yield return "\"format\": \"masstransit\" is the MassTransit RabbitMQ envelope; use it with a rabbitmq connection";
        if (ExchangeType is not ("fanout" or "direct" or "topic" or "headers"))
            yield return $"\"exchangeType\" must be fanout, direct, topic or headers, got '{ExchangeType}'";
        if (Queues is not null && connection is { IsKafka: true }) yield return "\"queues\" are RabbitMQ queues; a kafka task has none";
        foreach (var q in Queues ?? [])
            if (string.IsNullOrWhiteSpace(q.Name) || string.IsNullOrWhiteSpace(q.Exchange)) yield return "each of \"queues\" needs \"name\" and \"exchange\"";
        if (Reconnect.InitialDelayMs <= 0 || Reconnect.MaxDelayMs < Reconnect.InitialDelayMs)
            yield return "\"reconnect\" needs 0 < initialDelayMs <= maxDelayMs";
    }
}

/// <summary>One script over some collections (<c>"all"</c> or a list; names are case-insensitive).</summary>
public sealed record EtlTransform
{
    /// <summary>Either the string <c>"all"</c> or an array of collection names.</summary>
    public JsonElement Collections { get; init; }
    public string Script { get; init; } = "";

    [JsonIgnore]
    public bool AllCollections => Collections.ValueKind == JsonValueKind.String && Collections.GetString() == "all";

    private IReadOnlySet<string>? _names;

    public IReadOnlySet<string> CollectionNames() => _names ??= Collections.ValueKind == JsonValueKind.Array
        ? Collections.EnumerateArray().Select(c => c.GetString() ?? "").ToHashSet(StringComparer.OrdinalIgnoreCase)
        : new HashSet<string>();

    public bool Applies(string collection) => AllCollections || CollectionNames().Contains(collection);

    public IEnumerable<string> Problems()
    {
        if (!AllCollections && (Collections.ValueKind != JsonValueKind.Array || Collections.GetArrayLength() == 0
            || Collections.EnumerateArray().Any(c => c.ValueKind != JsonValueKind.String || string.IsNullOrWhiteSpace(c.GetString()))))
            yield return "\"collections\" must be \"all\" or a non-empty array of collection names";
        if (string.IsNullOrWhiteSpace(Script)) yield return "\"script\" is empty";
    }
}

public sealed record EtlQueue
{
    public string Name { get; init; } = "";
    public string Exchange { get; init; } = "";
    public string RoutingKey { get; init; } = "";
}

/// <summary>Broker unreachable → wait, doubling from the initial delay up to the cap, then try again.</summary>
public sealed record EtlReconnect
{
    public int InitialDelayMs { get; init; } = 5_000;
    public int MaxDelayMs { get; init; } = 60_000;
}
