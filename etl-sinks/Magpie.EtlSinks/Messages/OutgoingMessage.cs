using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Scripts;

namespace Magpie.EtlSinks.Messages;

/// <summary>
/// One message ready for a broker: what the script loaded plus the change it came from. <see cref="ChangeId"/>
/// is stable across re-deliveries (document id + etag, <c>#n</c> for the n-th message of one change), so a
/// consumer recognises a duplicate by it.
/// </summary>
public sealed record OutgoingMessage(ChangeEvent Change, int Sequence, LoadedMessage Loaded)
{
    public const string PutType = "magpie.etl.put";
    public const string DeleteType = "magpie.etl.delete";

    public string ChangeId => Sequence == 0 ? $"{Change.Id}@{Change.Etag}" : $"{Change.Id}@{Change.Etag}#{Sequence}";

    public string CloudEventId => Loaded.Id ?? ChangeId;

    public string CloudEventType => Loaded.Type ?? (Change.Op == ChangeOp.Delete ? DeleteType : PutType);

    public string Destination => Loaded.Destination;
}
