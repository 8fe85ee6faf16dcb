using System.Collections.Concurrent;
using System.Text;
using System.Text.Json;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Kafka;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Query.Subscriptions;

/// <summary>
/// Kafka mode: subscriptions' shared state in the compacted topic <c>magpie.subscriptions</c> (key = name, one partition), which
/// every query process reads from the beginning and applies in the same order, so all of them hold the same state. A change is
/// a compare-and-set over the log: a record names the version (offset) it was made from and is applied only if that is still
/// the version when it is read — the first of two racing changes wins everywhere, the other is ignored everywhere, and its
/// author learns which by reading up to its own record. Records are whole snapshots, so compaction keeps what a process starting
/// later needs; because a compacted topic keeps the last record of a key, a change that lost is followed by a re-assertion of
/// the state that won (a no-op for everyone who read both).
/// </summary>
public sealed class KafkaSubscriptionStates(string bootstrapServers, ILogger<KafkaSubscriptionStates> log) : ISubscriptionStates, IHostedService, IDisposable
{
    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web);
    private static readonly TimeSpan Answer = TimeSpan.FromSeconds(30);

    private readonly ConcurrentDictionary<string, SharedSubscription> _states = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, long> _versions = new(StringComparer.Ordinal);   // of deleted names too
    private readonly ConcurrentDictionary<string, (long Offset, bool Won)> _latest = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<Guid, TaskCompletionSource<bool>> _waiting = new();
    private readonly CancellationTokenSource _stop = new();
    private readonly TaskCompletionSource _caughtUp = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private IProducer<string, byte[]>? _producer;
    private Task _reader = Task.CompletedTask, _reasserter = Task.CompletedTask;

    public SharedSubscription? Current(string name) => _states.GetValueOrDefault(name);

    public IReadOnlyCollection<string> Names => [.. _states.Keys];

    private sealed record Change(Guid Proposal, long BasedOn, SharedSubscription? State, bool Reassert);

    public async Task<bool> ReplaceAsync(string name, SharedSubscription? expected, SharedSubscription? next, CancellationToken ct)
    {
        var basedOn = expected?.Version ?? _versions.GetValueOrDefault(name, -1);
        if (expected is null ? _states.ContainsKey(name) : !ReferenceEquals(Current(name), expected)) return false;
        var change = new Change(Guid.NewGuid(), basedOn, next, Reassert: false);
        var outcome = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        _waiting[change.Proposal] = outcome;
        try
        {
            await _producer!.ProduceAsync(Topics.Subscriptions, Record(name, change), ct);
            return await outcome.Task.WaitAsync(Answer, ct);
        }
        catch (TimeoutException) { throw new SubscriptionException(ErrorKind.Unavailable, $"magpie.subscriptions did not answer within {Answer.TotalSeconds:0} s"); }
        catch (KafkaException e) { throw new SubscriptionException(ErrorKind.Unavailable, $"can't write to magpie.subscriptions: {e.Error.Reason}"); }
        finally { _waiting.TryRemove(change.Proposal, out _); }
    }

    private static Message<string, byte[]> Record(string name, Change change) =>
        new() { Key = name, Value = JsonSerializer.SerializeToUtf8Bytes(change, Json) };

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        await TopicAdmin.EnsureAsync(bootstrapServers, [TopicAdmin.DefaultTopics(1, 1).Single(t => t.Name == Topics.Subscriptions)], cancellationToken);
        _producer = KafkaClients.BuildProducer<string, byte[]>(KafkaClients.Producer(bootstrapServers, "magpie-subscriptions"), log);
        _reader = Task.Factory.StartNew(Read, TaskCreationOptions.LongRunning);
        _reasserter = Task.Run(ReassertAsync);
        // Serve nothing before the state everyone else serves from is read.
        await _caughtUp.Task.WaitAsync(TimeSpan.FromSeconds(60), cancellationToken);
    }

    /// <summary>Applies every record in log order: the same state machine in every query process.</summary>
    private void Read() =>
        SupervisedLoop.Run(_ =>
        {
            using var consumer = KafkaClients.BuildConsumer<string, byte[]>(KafkaClients.Consumer(bootstrapServers, $"magpie-subscriptions-{Guid.NewGuid():N}"), log);
            var start = _latest.IsEmpty ? Offset.Beginning : new Offset(_latest.Values.Max(l => l.Offset) + 1);
            consumer.Assign(new TopicPartitionOffset(Topics.Subscriptions, 0, start));
            var end = consumer.QueryWatermarkOffsets(new TopicPartition(Topics.Subscriptions, 0), TimeSpan.FromSeconds(30)).High;
            if (end.Value <= start.Value || start == Offset.Beginning && end.Value == 0) _caughtUp.TrySetResult();
            while (!_stop.IsCancellationRequested)
            {
                if (consumer.Consume(TimeSpan.FromMilliseconds(200)) is not { IsPartitionEOF: false } r) continue;
                Apply(r.Message.Key, r.Offset.Value, r.Message.Value);
                if (r.Offset.Value + 1 >= end.Value) _caughtUp.TrySetResult();
            }
        }, new Backoff(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1)),
            (e, delay) => log.LogWarning("reading magpie.subscriptions: {Error}; reading on in {Delay}", e.Message, delay), _stop.Token);

    private void Apply(string name, long offset, byte[]? value)
    {
        var change = value is null ? null : JsonSerializer.Deserialize<Change>(value, Json);
        var version = _versions.GetValueOrDefault(name, -1);
        var won = change is not null && change.BasedOn == version;
        if (won && !change!.Reassert)
        {
            _versions[name] = offset;
            if (change.State is { } state) _states[name] = state with { Version = offset };
            else _states.TryRemove(name, out _);
        }
        _latest[name] = (offset, won);
        if (change is not null && _waiting.TryGetValue(change.Proposal, out var waiting)) waiting.TrySetResult(won && !change.Reassert);
    }

    /// <summary>
    /// The last record of a key is what compaction keeps: when it is a change that lost, the state that won is written again,
    /// so a process reading the compacted topic later starts from it.
    /// </summary>
    private async Task ReassertAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(TimeSpan.FromSeconds(1), _stop.Token);
                foreach (var (name, latest) in _latest)
                {
                    if (latest.Won) continue;
                    var version = _versions.GetValueOrDefault(name, -1);
                    await _producer!.ProduceAsync(Topics.Subscriptions, Record(name, new Change(Guid.NewGuid(), version, Current(name), Reassert: true)), _stop.Token);
                }
            }
            catch (OperationCanceledException) when (_stop.IsCancellationRequested) { }
            catch (Exception e) { log.LogWarning("re-asserting subscriptions: {Error}", e.Message); }
        }
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        _stop.Cancel();
        await Task.WhenAll(_reader, _reasserter).ContinueWith(_ => { }, TaskScheduler.Default);
        _producer?.Flush(TimeSpan.FromSeconds(5));
    }

    public void Dispose()
    {
        _producer?.Dispose();
        _stop.Dispose();
    }
}
