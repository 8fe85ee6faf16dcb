using System.Diagnostics;
using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Delivery;
using Magpie.EtlSinks.Messages;
using Magpie.EtlSinks.Scripts;
using Magpie.Scripting;
using Microsoft.Extensions.Logging;
using Magpie.EtlSinks.Runners;

namespace Magpie.EtlSinks.Tasks;

/// <summary>
/// Runs one ETL task: reads the change feed from the task's persisted position, runs the transforms,
/// publishes, and persists the position only after the broker confirmed the whole batch (at-least-once:
/// after a crash or an outage the unconfirmed tail is published again, with the same message ids).
/// </summary>
public sealed class EtlTaskRunner(string name, EtlTaskDefinition task, EtlConnection connection, IChangeFeed feed, EtlOptions options, ILogger log)
    : BrokerRunner<IMessageTarget>("ETL task", name, task.Connection, task.Reconnect, log), IRunner<EtlTaskStatsSnapshot>
{
    private const int PublishChunk = 1024;

    private readonly string _positionPath = EtlTaskPosition.PathOf(options.DataDir, name);
    private readonly List<(EtlTransform Transform, TransformScript Script)> _transforms = [];
    private EtlTaskPosition _position = EtlTaskPosition.Beginning;
    private IDisposable? _tracked;

    public EtlTaskStats Stats { get; } = new(name);

    protected override RunnerStatus Status => Stats;

    public EtlTaskStatsSnapshot Snapshot() => Stats.Snapshot(feed.Backlog(_position.FeedPosition, _position.LastEtag));

    public override void Start()
    {
        // The persisted position is what it resumes from (the beginning until loaded): the change log keeps everything after it.
        _tracked = feed.Track($"etl {Name}", () => Volatile.Read(ref _position).FeedPosition);
        base.Start();
    }

    protected override string? Prepare()
    {
        try
        {
            foreach (var t in task.Transforms) _transforms.Add((t, TransformScript.Compile(t.Script, options.ScriptLimits)));
            _position = EtlTaskPosition.Load(_positionPath);
        }
        catch (Exception e)
        {
            return $"task can't start: {e.Message}";
        }
        Stats.Resumed(_position);
        return null;
    }

    protected override Task OpenAsync(IMessageTarget target, CancellationToken ct) =>
        target.OpenAsync(_transforms.SelectMany(t => t.Script.Destinations).Distinct().ToList(), ct);

    /// <summary>A batch with its messages, ready to publish.</summary>
    private sealed record TransformedBatch(ChangeBatch Batch, List<OutgoingMessage> Messages, int Documents, int Filtered);

    /// <summary>Reading + transforming the next batch while the broker confirms this one; publishing + persisting in order.</summary>
    protected override Task WorkAsync(IMessageTarget target, CancellationToken ct) => InTwoStagesAsync<TransformedBatch>(async (ready, ct) =>
    {
        var waited = Stopwatch.GetTimestamp();
        await foreach (var batch in feed.ReadAsync(_position.FeedPosition, options.BatchSize, ct))
        {
            var started = Stopwatch.GetTimestamp();
            var (messages, documents, filtered) = Transform(batch.Changes);
            Stats.Spent(read: Stopwatch.GetElapsedTime(waited, started), transform: Stopwatch.GetElapsedTime(started));
            await ready(new TransformedBatch(batch, messages, documents, filtered));
            waited = Stopwatch.GetTimestamp();
        }
    }, (batch, ct) => PublishAsync(target, batch, ct), ct);

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

    protected override IMessageTarget CreateClient()
    {
        if (Targets is { } targets) return targets();
        var source = task.Source ?? $"/magpie/etl/{Name}";
        return connection.IsKafka
            ? new KafkaTarget(connection, task, Name, source)
            : new RabbitMqTarget(connection, task, Name, source);
    }

    public override async ValueTask DisposeAsync()
    {
        await base.DisposeAsync();
        _tracked?.Dispose();
    }
}
