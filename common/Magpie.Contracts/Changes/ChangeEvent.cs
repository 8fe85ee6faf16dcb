using System.Text.Json;

namespace Magpie.Contracts.Changes;

public enum ChangeOp : byte { Put = 1, Delete = 2 }

/// <summary>
/// One committed change, as it travels on <c>magpie.changes</c> (key = <see cref="Id"/>).
/// <see cref="Document"/> is the full document after the change; null for deletes.
/// </summary>
public sealed record ChangeEvent(
    string Id,
    string Collection,
    long Etag,
    ChangeOp Op,
    DateTimeOffset LastModified,
    JsonElement? Document)
{
    /// <summary>
    /// A put of an id with no stored version before it (never written, or deleted since): a reader that applied every earlier
    /// change in order holds nothing of the id and may add it without looking for an older copy. Only feeds that deliver each
    /// change once set it (the embedded log); Kafka's at-least-once relay may deliver a change twice, so its feed leaves it false.
    /// </summary>
    public bool Created { get; init; }
}
