using Magpie.Contracts;
using System.Diagnostics;
using System.Threading.Channels;
using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Delivery;
using Magpie.EtlSinks.Messages;
using Magpie.EtlSinks.Scripts;
using Magpie.Scripting;
using Microsoft.Extensions.Logging;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.Tasks;

/// <summary>
/// Runs one ETL task: reads the change feed from the task's persisted position, runs the transforms,
/// publishes, and persists the position only after the broker confirmed the whole batch (at-least-once:
/// after a crash or an outage the unconfirmed tail is published again, with the same message ids).
/// Broker trouble → back off (doubling, capped) and start over from the persisted position.
/// </summary>
public sealed class EtlTaskRunner(string name, EtlTaskDefinition task, EtlConnection connection, IChangeFeed feed, EtlOptions options, ILogger log)
    : IAsyncDisposable
{
    private const int PublishChunk = 1024;

    private readonly string _positionPath = EtlTaskPosition.PathOf(options.DataDir, name);
    private readonly CancellationTokenSource _stop = new();
    private readonly List<(EtlTransform Transform, TransformScript Script)> _transforms = [];
    private Task _loop = Task.CompletedTask;
    private EtlTaskPosition _position = EtlTaskPosition.Beginning;

    public EtlTaskStats Stats { get; } = new(name);

    public EtlTaskStatsSnapshot Snapshot() => Stats.Snapshot(feed.Backlog(_position.FeedPosition, _position.LastEtag));

    public void Start()
    {
        // The persisted position is what it resumes from (the beginning until loaded): the change log keeps everything after it.
        _tracked = feed.Track($"etl {name}", () => Volatile.Read(ref _position).FeedPosition);
        _loop = Task.Run(() => RunAsync(_stop.Token));
    }

    private IDisposable? _tracked;

    private async Task RunAsync(CancellationToken ct)
    {
        try
        {
            foreach (var t in task.Transforms) _transforms.Add((t, TransformScript.Compile(t.Script, options.ScriptLimits)));
            _position = EtlTaskPosition.Load(_positionPath);
        }
        catch (Exception e)
        {
            Stats.Failed($"task can't start: {e.Message}");
            return;
        }
        Stats.Resumed(_position);
        var backoff = new Backoff(TimeSpan.FromMilliseconds(task.Reconnect.InitialDelayMs), TimeSpan.FromMilliseconds(task.Reconnect.MaxDelayMs));
        IMessageTarget? target = null;
        try
        {
            await SupervisedLoop.RunAsync(async ct =>
            {
                var opened = CreateTarget();
                await CloseAsync(Interlocked.Exchange(ref target, opened));
                await opened.OpenAsync(_transforms.SelectMany(t => t.Script.Destinations).Distinct().ToList(), ct);
                Stats.Running();
                backoff.Reset();
                await PublishFromFeedAsync(opened, ct);
            }, backoff, async (e, delay) =>
            {
                // Said before the client is let go: closing a client whose broker has just vanished can take a while itself
                // (and counts towards the delay, so the next attempt comes when the status says it will).
                var state = e is BrokerException { NeedsUser: true } ? RunnerState.Failed : RunnerState.Reconnecting;
                Stats.Interrupted(state, e.Message, DateTimeOffset.UtcNow + delay);
                log.LogWarning("ETL task {Task}: {Error}; retrying in {Delay} s", name, e.Message, delay.TotalSeconds);
                await CloseAsync(Interlocked.Exchange(ref target, null));
            }, ct);
        }
        finally { await CloseAsync(Interlocked.Exchange(ref target, null)); }
    }

    /// <summary>How long a target's client may take to close before the task goes on without waiting for it.</summary>
    internal static readonly TimeSpan TargetCloseTimeout = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Closes the client, but never lets a close that hangs (a broker gone mid-handshake) hold the task: after
    /// <see cref="TargetCloseTimeout"/> the close finishes in the background and the task reconnects with a new client.
    /// </summary>
    private async Task CloseAsync(IMessageTarget? target)
    {
        if (target is null) return;
        var closing = Task.Run(async () => await target.DisposeAsync());
        try
        {
            await closing.WaitAsync(TargetCloseTimeout);
        }
        catch (TimeoutException)
        {
            log.LogWarning("ETL task {Task}: its {Connection} client did not close within {Timeout} s; left to close in the background",
                name, task.Connection, TargetCloseTimeout.TotalSeconds);
            _ = closing.ContinueWith(t => t.Exception, TaskContinuationOptions.OnlyOnFaulted);
        }
        catch (Exception e)
        {
            log.LogWarning("ETL task {Task}: closing its {Connection} client failed: {Error}", name, task.Connection, e.Message);
        }
    }

    /// <summary>A batch with its messages, ready to publish.</summary>
    private sealed record TransformedBatch(ChangeBatch Batch, List<OutgoingMessage> Messages, int Documents, int Filtered);

    /// <summary>
    /// Two stages, so the scripts of the next batch run while the broker confirms this one: reading +
    /// transforming feeds a small bounded channel; publishing + persisting drains it in order. Whatever
    /// fails, both stop and the caller starts over from the last persisted position.
    /// </summary>
    private async Task PublishFromFeedAsync(IMessageTarget target, CancellationToken ct)
    {
        using var attempt = CancellationTokenSource.CreateLinkedTokenSource(ct);
        var ready = Channel.CreateBounded<TransformedBatch>(new BoundedChannelOptions(2) { SingleReader = true, SingleWriter = true });
        var transforming = Task.Run(async () =>
        {
            try
            {
                var waited = Stopwatch.GetTimestamp();
                await foreach (var batch in feed.ReadAsync(_position.FeedPosition, options.BatchSize, attempt.Token))
                {
                    var started = Stopwatch.GetTimestamp();
                    var (messages, documents, filtered) = Transform(batch.Changes);
                    Stats.Spent(read: Stopwatch.GetElapsedTime(waited, started), transform: Stopwatch.GetElapsedTime(started));
                    await ready.Writer.WriteAsync(new TransformedBatch(batch, messages, documents, filtered), attempt.Token);
                    waited = Stopwatch.GetTimestamp();
                }
                ready.Writer.TryComplete();
            }
            catch (Exception e) { ready.Writer.TryComplete(e); }
        }, attempt.Token);
        try
        {
            await foreach (var batch in ready.Reader.ReadAllAsync(attempt.Token))
                await PublishAsync(target, batch, attempt.Token);
            await ready.Reader.Completion;   // the transform stage's failure, if that ended it
        }
        finally
        {
            attempt.Cancel();
            await transforming.ContinueWith(_ => { }, TaskScheduler.Default);
        }
    }

    private async Task PublishAsync(IMessageTarget target, TransformedBatch t, CancellationToken ct)
    {
        var started = Stopwatch.GetTimestamp();
        for (var i = 0; i < t.Messages.Count; i += PublishChunk)
            await target.PublishAsync(t.Messages.GetRange(i, Math.Min(PublishChunk, t.Messages.Count - i)), ct);
        var published = Stopwatch.GetTimestamp();
        var lastEtag = Math.Max(Math.Max(_position.LastEtag, t.Batch.SeenEtag), t.Batch.Changes.Select(c => c.Etag).DefaultIfEmpty(0).Max());
        _position = new EtlTaskPosition(new Dictionary<string, long>(t.Batch.After.Next), lastEtag,
            _position.MessagesSent + t.Messages.Count, _position.DocumentsProcessed + t.Documents);
        _position.Save(_positionPath);
        Stats.Batch(lastEtag, t.Documents, t.Filtered, t.Messages.Count);
        Stats.Spent(publish: Stopwatch.GetElapsedTime(started, published), persist: Stopwatch.GetElapsedTime(published));
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
                    var made = script.Run(change).Select(loaded => new OutgoingMessage(change, sequence++, loaded)).ToList();
                    // What the broker could not carry fails this document (all its messages), not the task.
                    if (!connection.IsKafka && made.Select(RabbitMqTarget.Refuses).FirstOrDefault(r => r is not null) is { } refused)
                        throw new ScriptRunException(refused);
                    messages.AddRange(made);
                }
                catch (ScriptRunException e) { Stats.ScriptError(change.Id, e.Message); }
            }
            if (!covered) continue;
            documents++;
            if (sequence == 0) filtered++;
        }
        return (messages, documents, filtered);
    }

    /// <summary>Where targets come from instead of the connection (tests: a broker client that misbehaves on cue).</summary>
    internal Func<IMessageTarget>? Targets { get; init; }

    private IMessageTarget CreateTarget()
    {
        if (Targets is { } targets) return targets();
        var source = task.Source ?? $"/magpie/etl/{name}";
        return connection.IsKafka
            ? new KafkaTarget(connection, task, name, source)
            : new RabbitMqTarget(connection, task, name, source);
    }

    public async ValueTask DisposeAsync()
    {
        _stop.Cancel();
        try { await _loop; } catch (OperationCanceledException) { }
        _tracked?.Dispose();
        _stop.Dispose();
    }
}
