using System.Collections.Concurrent;
using System.Text.Json;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Changes;
using Magpie.Kafka;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Query.Shards;

/// <summary>
/// Kafka mode: how far the ingest has applied each partition of <c>magpie.documents</c>, read from <c>magpie.input-progress</c>
/// (every record from the start: the topic is compacted to one per partition). A query's <c>waitForInputOffsets</c> waits here
/// until every partition it names has been applied past its offset, then asks its shards to have reached the
/// <c>magpie.changes</c> offsets holding those writes — a producer's own write in the answer, by its Kafka offset.
/// </summary>
public sealed class InputOffsets(string bootstrapServers, ILogger<InputOffsets> log) : BackgroundService
{
    private readonly ConcurrentDictionary<int, InputApplied> _applied = new();
    private readonly Signal _received = new();

    /// <summary>The next offset applied of each input partition known here (a header on query answers).</summary>
    public IReadOnlyDictionary<string, long> Applied => _applied.ToDictionary(a => a.Key.ToString(System.Globalization.CultureInfo.InvariantCulture), a => a.Value.NextOffset);

    /// <summary>
    /// The <c>magpie.changes</c> offsets (partition → next) holding every write before each <paramref name="offsets"/> entry (input partition →
    /// offset: the write's own offset + 1, or any later one); null if the ingest has not applied them all within the timeout.
    /// </summary>
    public async Task<Dictionary<string, long>?> WaitAsync(IReadOnlyDictionary<string, long> offsets, TimeSpan timeout, CancellationToken ct)
    {
        List<InputApplied?> Records() => offsets.Select(o => int.TryParse(o.Key, out var p) && _applied.TryGetValue(p, out var r) && r.NextOffset >= o.Value ? r : null).ToList();
        if (!await Waits.UntilAsync(() => Records().All(r => r is not null), timeout, ct, _received)) return null;
        var target = new Dictionary<string, long>();
        foreach (var (partition, next) in Records().SelectMany(r => r!.Changes)) target[partition] = Math.Max(next, target.GetValueOrDefault(partition));
        return target;
    }

    protected override Task ExecuteAsync(CancellationToken ct) => Task.Factory.StartNew(() => SupervisedLoop.Run(_ =>
    {
        using var consumer = KafkaClients.BuildConsumer<string, byte[]>(KafkaClients.Consumer(bootstrapServers, $"magpie-input-progress-{Guid.NewGuid():N}"), log);
        consumer.Assign(new TopicPartitionOffset(Topics.InputProgress, 0, Offset.Beginning));
        while (!ct.IsCancellationRequested)
        {
            if (consumer.Consume(TimeSpan.FromMilliseconds(200)) is not { IsPartitionEOF: false, Message.Value: { } value }) continue;
            if (JsonSerializer.Deserialize<InputApplied>(value, WireJson.Web) is { } record)
            {
                _applied.AddOrUpdate(record.Partition, record, (_, was) => record.NextOffset >= was.NextOffset ? record : was);
                _received.Raise();
            }
        }
    }, new Backoff(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1)),
        (e, delay) => log.LogWarning("reading {Topic}: {Error}; again in {Delay}", Topics.InputProgress, e.Message, delay), ct),
        ct, TaskCreationOptions.LongRunning, TaskScheduler.Default);
}
