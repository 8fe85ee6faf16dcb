using Magpie.Producers;
using Magpie.Producers.Sinks;

namespace Magpie.Producers.Publishing;

/// <summary>
/// Cuts a stream of writes into batches and sends them with at most <c>maxInFlight</c> batches
/// outstanding. Writes to the same id stay in order: a batch is built in stream order and, for HTTP,
/// applied atomically; for Kafka, one key maps to one partition.
/// </summary>
public static class Publisher
{
    public static async Task<long> PublishAsync(IEnumerable<DocumentWrite> writes, IDocumentSink sink, int batchSize, int maxInFlight,
        IProgress<int>? progress, CancellationToken ct)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(batchSize, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxInFlight, 1);
        using var slots = new SemaphoreSlim(maxInFlight);
        var inFlight = new List<Task>();
        long sent = 0;
        foreach (var batch in writes.Chunk(batchSize))
        {
            await slots.WaitAsync(ct);
            inFlight.RemoveAll(t => t.IsCompletedSuccessfully);
            if (inFlight.FirstOrDefault(t => t.IsFaulted || t.IsCanceled) is { } failed) await failed;
            inFlight.Add(Send(batch));
            sent += batch.Length;
        }
        await Task.WhenAll(inFlight);
        return sent;

        async Task Send(DocumentWrite[] batch)
        {
            try
            {
                await sink.SendAsync(batch, ct);
                progress?.Report(batch.Length);
            }
            finally { slots.Release(); }
        }
    }
}
