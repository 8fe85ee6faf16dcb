using System.Runtime.CompilerServices;
using Magpie.Ingest.Documents;

namespace Magpie.Ingest.Changes;

/// <summary>One committed change-log entry and the address just after it (where a reader resumes).</summary>
public sealed record LogEntry(byte[] Bytes, int Length, long Address, long NextAddress)
{
    public ChangeRecord Decode() => ChangeRecord.Decode(Bytes.AsSpan(0, Length));
}

/// <summary>Tails the committed change log in batches: everything available now, up to a size, then waits.</summary>
public sealed class ChangeLogTail(DocumentStore store)
{
    public long BeginAddress => store.Log.BeginAddress;

    /// <summary>The newest etag written (a reader that has passed it is caught up).</summary>
    public long LastEtag => store.LastEtag;

    public async IAsyncEnumerable<IReadOnlyList<LogEntry>> ReadAsync(long from, int maxBatch, [EnumeratorCancellation] CancellationToken ct)
    {
        using var iter = store.Log.Scan(Math.Max(from, store.Log.BeginAddress), long.MaxValue);
        while (!ct.IsCancellationRequested)
        {
            var batch = new List<LogEntry>();
            while (batch.Count < maxBatch && iter.GetNext(out byte[] bytes, out var length, out var address, out var next))
                if (!ChangeRecord.IsSourcePosition(bytes.AsSpan(0, length))) batch.Add(new LogEntry(bytes, length, address, next));
            if (batch.Count > 0) { yield return batch; continue; }
            if (!await iter.WaitAsync(ct)) yield break;
        }
    }
}
