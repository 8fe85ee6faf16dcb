using System.Collections.Concurrent;
using System.Text.Json;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Changes;
using Magpie.Kafka;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// Read your writes through Kafka: what the input consumer applied, per input partition, once the relay has put
/// it on <c>magpie.changes</c> — kept for <c>GET /stats/pipeline</c> and published to <c>magpie.input-progress</c> (compacted,
/// keyed by input partition) for query processes, whose <c>waitForInputOffsets</c> turns it into a staleness target. Runs
/// beside the consumer: waiting for the relay never holds the input back.
/// </summary>
public sealed class InputProgress(IngestOptions options, ILogger<InputProgress> log, ChangeRelay? relay = null) : BackgroundService
{
    private readonly ConcurrentDictionary<int, (long NextOffset, long Etag, ChangeRelay Relay)> _applied = new();
    private readonly ConcurrentDictionary<int, InputApplied> _published = new();
    private readonly SemaphoreSlim _more = new(0);

    /// <summary>What query processes have been told, by input partition.</summary>
    public IReadOnlyDictionary<int, InputApplied> Published => _published;

    /// <summary>
    /// Everything of <paramref name="partition"/> before <paramref name="nextOffset"/> is in the store, the newest write at
    /// <paramref name="etag"/>, which <paramref name="by"/> publishes (a partitioned store's partition has its own relay and etags).
    /// </summary>
    public void Applied(int partition, long nextOffset, long etag, ChangeRelay? by = null)
    {
        var publisher = by ?? relay ?? throw new InvalidOperationException("no relay publishes this store's changes");
        _applied.AddOrUpdate(partition, (nextOffset, etag, publisher), (_, was) => (Math.Max(was.NextOffset, nextOffset), Math.Max(was.Etag, etag), publisher));
        if (_more.CurrentCount == 0) _more.Release();
    }

    protected override async Task ExecuteAsync(CancellationToken ct)
    {
        using var producer = KafkaClients.BuildProducer<string, byte[]>(KafkaClients.Producer(options.KafkaBootstrapServers!, "magpie-input-progress"), log);
        while (!ct.IsCancellationRequested)
        {
            try
            {
                await _more.WaitAsync(ct);
                var applied = _applied.Where(a => !_published.TryGetValue(a.Key, out var p) || p.NextOffset < a.Value.NextOffset).ToList();
                if (applied.Count == 0) continue;
                foreach (var (partition, (next, etag, publisher)) in applied)
                {
                    // The changes' ends once this etag is published cover every write before it.
                    if (await publisher.PublishedAsync(etag, TimeSpan.FromSeconds(30), ct) is not { } ends)
                    {
                        _more.Release();   // the relay is behind (Kafka away): ask again
                        await Task.Delay(500, ct);
                        break;
                    }
                    var changes = ends.ToDictionary(e => e.Key.ToString(System.Globalization.CultureInfo.InvariantCulture), e => e.Value);
                    var record = new InputApplied(partition, next, etag, changes);
                    await producer.ProduceAsync(Topics.InputProgress, new Message<string, byte[]>
                    {
                        Key = partition.ToString(System.Globalization.CultureInfo.InvariantCulture), Value = JsonSerializer.SerializeToUtf8Bytes(record, WireJson.Web),
                    }, ct);
                    _published[partition] = record;
                }
            }
            catch (OperationCanceledException) when (ct.IsCancellationRequested) { break; }
            catch (KafkaException e)
            {
                log.LogWarning("input progress not published ({Error}); retrying", e.Error.Reason);
                _more.Release();
                await Task.Delay(1000, ct);
            }
        }
    }
}
