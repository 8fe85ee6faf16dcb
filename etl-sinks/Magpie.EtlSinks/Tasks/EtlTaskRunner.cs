using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Delivery;
using Magpie.EtlSinks.Messages;
using Magpie.EtlSinks.Scripts;
using Microsoft.Extensions.Logging;

namespace Magpie.EtlSinks.Tasks;

/// <summary>
/// Runs one ETL task: reads the change feed from the task's persisted position, runs the transforms,
/// publishes, and persists the position only after the broker confirmed the whole batch (at-least-once:
/// after a crash or an outage the unconfirmed tail is published again, with the same message ids).
/// Broker trouble → back off (doubling, capped) and start over from the persisted position.
/// </summary>
public sealed class EtlTaskRunner : IAsyncDisposable
{
    private const int PublishChunk = 1024;

    private readonly string _name;
    private readonly EtlTaskDefinition _task;
    private readonly EtlConnection _connection;
    private readonly IChangeFeed _feed;
    private readonly EtlOptions _options;
    private readonly ILogger _log;
    private readonly string _positionPath;
    private readonly CancellationTokenSource _stop = new();
    private readonly List<(EtlTransform Transform, TransformScript Script)> _transforms = [];
    private Task _loop = Task.CompletedTask;
    private EtlTaskPosition _position = EtlTaskPosition.Beginning;

    public EtlTaskRunner(string name, EtlTaskDefinition task, EtlConnection connection, IChangeFeed feed, EtlOptions options, ILogger log)
    {
        _name = name;
        _task = task;
        _connection = connection;
        _feed = feed;
        _options = options;
        _log = log;
        _positionPath = EtlTaskPosition.PathOf(options.DataDir, name);
        Stats = new EtlTaskStats(name);
    }

    public EtlTaskStats Stats { get; }

    public EtlTaskStatsSnapshot Snapshot() => Stats.Snapshot(_feed.Backlog(_position.FeedPosition, _position.LastEtag));

    public void Start() => _loop = Task.Run(() => RunAsync(_stop.Token));

    private async Task RunAsync(CancellationToken ct)
    {
        try
        {
            foreach (var t in _task.Transforms) _transforms.Add((t, TransformScript.Compile(t.Script, _options.ScriptLimits)));
            _position = EtlTaskPosition.Load(_positionPath);
        }
        catch (Exception e)
        {
            Stats.Failed($"task can't start: {e.Message}");
            return;
        }
        Stats.Resumed(_position);
        var delay = TimeSpan.FromMilliseconds(_task.Reconnect.InitialDelayMs);
        while (!ct.IsCancellationRequested)
        {
            try
            {
                await using var target = CreateTarget();
                await target.OpenAsync(_transforms.SelectMany(t => t.Script.Destinations).Distinct().ToList(), ct);
                Stats.Running();
                delay = TimeSpan.FromMilliseconds(_task.Reconnect.InitialDelayMs);
                await foreach (var batch in _feed.ReadAsync(_position.FeedPosition, _options.BatchSize, ct))
                    await PublishBatchAsync(target, batch, ct);
            }
            catch (OperationCanceledException) when (ct.IsCancellationRequested) { break; }
            catch (Exception e)
            {
                var needsUser = e is EtlTargetException { NeedsUser: true };
                var state = needsUser ? EtlTaskState.Failed : EtlTaskState.Reconnecting;
                Stats.Interrupted(state, e.Message, DateTimeOffset.UtcNow + delay);
                _log.LogWarning("ETL task {Task}: {Error}; retrying in {Delay} s", _name, e.Message, delay.TotalSeconds);
                try { await Task.Delay(delay, ct); } catch (OperationCanceledException) { break; }
                delay = TimeSpan.FromMilliseconds(Math.Min(delay.TotalMilliseconds * 2, _task.Reconnect.MaxDelayMs));
            }
        }
    }

    private async Task PublishBatchAsync(IMessageTarget target, ChangeBatch batch, CancellationToken ct)
    {
        var (messages, documents, filtered) = Transform(batch.Changes);
        for (var i = 0; i < messages.Count; i += PublishChunk)
            await target.PublishAsync(messages.GetRange(i, Math.Min(PublishChunk, messages.Count - i)), ct);
        var lastEtag = Math.Max(_position.LastEtag, batch.Changes.Max(c => c.Etag));
        _position = new EtlTaskPosition(new Dictionary<string, long>(batch.After.Next), lastEtag,
            _position.MessagesSent + messages.Count, _position.DocumentsProcessed + documents);
        _position.Save(_positionPath);
        Stats.Batch(lastEtag, documents, filtered, messages.Count);
    }

    /// <summary>Runs every transform that covers each change's collection; a throwing script costs that document, not the task.</summary>
    private (List<OutgoingMessage> Messages, int Documents, int Filtered) Transform(IReadOnlyList<ChangeEvent> changes)
    {
        var messages = new List<OutgoingMessage>(changes.Count);
        int documents = 0, filtered = 0;
        foreach (var change in changes)
        {
            var sequence = 0;
            var covered = false;
            foreach (var (transform, script) in _transforms)
            {
                if (!transform.Applies(change.Collection)) continue;
                covered = true;
                try
                {
                    foreach (var loaded in script.Run(change)) messages.Add(new OutgoingMessage(change, sequence++, loaded));
                }
                catch (ScriptRunException e) { Stats.ScriptError(change.Id, e.Message); }
            }
            if (!covered) continue;
            documents++;
            if (sequence == 0) filtered++;
        }
        return (messages, documents, filtered);
    }

    private IMessageTarget CreateTarget()
    {
        var source = _task.Source ?? $"/magpie/etl/{_name}";
        return _connection.IsKafka
            ? new KafkaTarget(_connection, _task, _name, source)
            : new RabbitMqTarget(_connection, _task, _name, source);
    }

    public async ValueTask DisposeAsync()
    {
        _stop.Cancel();
        try { await _loop; } catch (OperationCanceledException) { }
        foreach (var (_, script) in _transforms) script.Dispose();
        _stop.Dispose();
    }
}
