using System.Text.Json;

namespace Magpie.Contracts.Etl;

/// <summary>
/// The message an ETL task publishes in <c>"format": "masstransit"</c>: a MassTransit consumer written
/// against this contract (<c>IConsumer&lt;DocumentChanged&gt;</c>) receives Magpie's changes with no glue
/// code. MassTransit names the type <c>urn:message:Magpie.Contracts.Etl:DocumentChanged</c> and binds its
/// receive endpoints to the fanout exchange <see cref="ExchangeName"/>.
/// </summary>
public sealed record DocumentChanged
{
    public const string MessageUrn = "urn:message:Magpie.Contracts.Etl:DocumentChanged";
    public const string ExchangeName = "Magpie.Contracts.Etl:DocumentChanged";

    /// <summary>The document id.</summary>
    public required string Id { get; init; }
    public required string Collection { get; init; }
    public required long Etag { get; init; }

    /// <summary><c>put</c> or <c>delete</c>.</summary>
    public required string Operation { get; init; }
    public DateTimeOffset LastModified { get; init; }

    /// <summary>What the task's script loaded (for deletes: what its <c>deleted</c> function loaded, by default <c>{ id, collection }</c>).</summary>
    public JsonElement? Document { get; init; }

    /// <summary>Stable across re-deliveries: document id + etag (+ <c>#n</c> for the n-th message of one change). Consumers drop duplicates by it.</summary>
    public required string ChangeId { get; init; }
}
