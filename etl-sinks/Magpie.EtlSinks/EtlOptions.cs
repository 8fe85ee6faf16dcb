using Magpie.Scripting;

namespace Magpie.EtlSinks;

public sealed record EtlOptions
{
    public required string DataDir { get; init; }

    /// <summary>Kafka bootstrap servers, for reading <c>magpie.changes</c> when no embedded store runs in this process.</summary>
    public string? KafkaBootstrapServers { get; init; }

    /// <summary>Where queue sinks write when no store runs in this process: the ingest API (<c>IngestUrl</c>), with this deployment's key.</summary>
    public Magpie.Contracts.Documents.IMessageWriter? Ingest { get; init; }

    public ScriptLimits ScriptLimits { get; init; } = ScriptLimits.Default;

    /// <summary>Changes read per batch; a task's position is persisted once per batch, after every message of it was confirmed.</summary>
    public int BatchSize { get; init; } = 1024;
}
