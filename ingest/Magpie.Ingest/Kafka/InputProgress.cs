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
/// Read your writes through Kafka: what <see cref="DocumentTopicConsumer"/> applied, per input partition, once the relay has put
/// it on <c>magpie.changes</c> — kept for <c>GET /stats/pipeline</c> and published to <c>magpie.input-progress</c> (compacted,
/// keyed by input partition) for query processes, whose <c>waitForInputOffsets</c> turns it into a staleness target. Runs
/// beside the consumer: waiting for the relay never holds the input back.
/// </summary>
public sealed class InputProgress(ChangeRelay relay, IngestOptions options, ILogger<InputProgress> log) : BackgroundService
{
    private readonly ConcurrentDictionary<int, (long NextOffset, long Etag)> _applied = new();
    private readonly ConcurrentDictionary<int, InputApplied> _published = new();
    private readonly SemaphoreSlim _more = new(0);

    /// <summary>What query processes have been told, by input partition.</summary>
    public IReadOnlyDictionary<int, InputApplied> Published => _published;

    /// <summary>Everything of <paramref name="partition"/> before <paramref name="nextOffset"/> is in the store, the newest write at <paramref name="etag"/>.</summary>
    public void Applied(int partition, long nextOffset, long etag)
    {
        _applied.AddOrUpdate(partition, (nextOffset, etag), (_, was) => (Math.Max(was.NextOffset, nextOffset), Math.Max(was.Etag, etag)));
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
                // The changes' ends once the newest of these etags is published cover every one of them.
                if (await relay.PublishedAsync(applied.Max(a => a.Value.Etag), TimeSpan.FromSeconds(30), ct) is not { } ends)
                {
                    _more.Release();   // the relay is behind (Kafka away): ask again
                    await Task.Delay(500, ct);
                    continue;
                }
                var changes = ends.ToDictionary(e => e.Key.ToString(System.Globalization.CultureInfo.InvariantCulture), e => e.Value);
                foreach (var (partition, (next, etag)) in applied)
                {
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
