namespace Magpie.Ingest.Documents;

/// <summary>
/// How far the store has applied an input source (a Kafka topic partition): every offset below
/// <see cref="Next"/> is in the store, except <see cref="Rejected"/> offsets of the last batch, whose
/// writes failed and whose dead letters may not have been confirmed yet. Written in the same commit as
/// the batch's writes, so a redelivered message is recognised and not applied twice.
/// </summary>
public sealed record SourcePosition(long Next, IReadOnlySet<long> Rejected)
{
    public bool Applied(long offset) => offset < Next && !Rejected.Contains(offset);
}

/// <summary>Where each command of a write came from, and how far each source gets with this write.</summary>
public sealed record SourceProgress(IReadOnlyDictionary<string, long> Next, IReadOnlyList<(string Source, long Offset)> Origins);
