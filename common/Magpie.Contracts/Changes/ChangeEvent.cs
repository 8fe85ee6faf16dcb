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
    JsonElement? Document);
