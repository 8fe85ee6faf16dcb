namespace Magpie.Contracts.Changes;

/// <summary>
/// How far the ingest has applied one partition of <c>magpie.documents</c>: the next offset (everything before it is in the
/// store), the newest etag those writes got, and the <c>magpie.changes</c> end offsets once the relay published that etag
/// (partition → next offset): a query whose shards have reached them sees every write before <see cref="NextOffset"/>.
/// </summary>
public sealed record InputApplied(int Partition, long NextOffset, long Etag, IReadOnlyDictionary<string, long> Changes);
