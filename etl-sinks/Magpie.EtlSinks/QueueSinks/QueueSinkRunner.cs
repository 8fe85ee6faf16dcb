using System.Diagnostics;
using System.Threading.Channels;
using Magpie.Contracts;
using Magpie.Contracts.Documents;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Delivery;
using Magpie.EtlSinks.Tasks;
using Magpie.Scripting;
using Microsoft.Extensions.Logging;
using Magpie.EtlSinks.Brokers;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// Runs one queue sink: takes a batch from the broker, runs the script on each message, writes every message's writes in one
/// store commit (each message all or nothing, recorded in the sink's ledger so a redelivery is not applied twice), sends the
/// messages that failed to the dead letters with the reason, and only then acknowledges the batch. At-least-once delivery with
/// idempotent writes: a crash anywhere leaves the unacknowledged messages in the broker, and the ledger recognises those
/// already written. Broker or store trouble → back off (doubling, capped) and start over with a new connection.
/// </summary>
public sealed class QueueSinkRunner(string name, QueueSinkDefinition sink, EtlConnection connection, IMessageWriter? writer, EtlOptions options, ILogger log)
    : IAsyncDisposable
{
    private static readonly TimeSpan LagEvery = TimeSpan.FromSeconds(2);

    private readonly CancellationTokenSource _stop = new();
    private Task _loop = Task.CompletedTask;
    private SinkScript? _script;

    /// <summary>The ledger a sink's message ids are recorded in.</summary>
    public static string LedgerOf(string sink) => "sink:" + sink;

    public QueueSinkStats Stats { get; } = new(name, sink.Sources);

    /// <summary>Where sources come from instead of the connection (tests: a broker that misbehaves on cue).</summary>
    internal Func<IMessageSource>? Sources { get; init; }

    public void Start() => _loop = Task.Run(() => RunAsync(_stop.Token));

    private async Task RunAsync(CancellationToken ct)
    {
        if (writer is null)
        {
            Stats.Failed("this process has no document store to write to: run the sinks with ingest (--target all or ingest,sinks), or set IngestUrl");
            return;
        }
        try { _script = SinkScript.Compile(sink.Script, options.ScriptLimits); }
        catch (Exception e)
        {
            Stats.Failed($"sink can't start: {e.Message}");
            return;
        }
        var backoff = new Backoff(TimeSpan.FromMilliseconds(sink.Reconnect.InitialDelayMs), TimeSpan.FromMilliseconds(sink.Reconnect.MaxDelayMs));
        IMessageSource? source = null;
        try
        {
            await SupervisedLoop.RunAsync(async ct =>
            {
                var opened = Sources?.Invoke() ?? (connection.IsKafka ? new KafkaSource(connection, sink, name) : new RabbitMqSource(connection, sink, name));
                await CloseAsync(Interlocked.Exchange(ref source, opened));
                await opened.OpenAsync(ct);
                Stats.Running();
                backoff.Reset();
                await ConsumeAsync(opened, writer, ct);
            }, backoff, async (e, delay) =>
            {
                var needsUser = e is BrokerException { NeedsUser: true };
                Stats.Interrupted(needsUser ? RunnerState.Failed : RunnerState.Reconnecting, e.Message, DateTimeOffset.UtcNow + delay);
                log.LogWarning("queue sink {Sink}: {Error}; starting over in {Delay} s", name, e.Message, delay.TotalSeconds);
                await CloseAsync(Interlocked.Exchange(ref source, null));
            }, ct);
        }
        finally { await CloseAsync(Interlocked.Exchange(ref source, null)); }
    }

    private async Task CloseAsync(IMessageSource? source)
    {
        if (source is null) return;
        try { await source.DisposeAsync().AsTask().WaitAsync(EtlTaskRunner.TargetCloseTimeout); }
        catch (Exception e) { log.LogWarning("queue sink {Sink}: closing its {Connection} client: {Error}", name, sink.Connection, e.Message); }
    }

    /// <summary>
    /// Two stages, so the script runs on the next batch while the store commits this one: receiving + scripting feeds a
    /// channel of two batches; writing, dead-lettering and acknowledging drains it in order. Whatever fails stops both, and
    /// the caller starts over with a new connection (the broker hands over what was not acknowledged).
    /// </summary>
    private async Task ConsumeAsync(IMessageSource source, IMessageWriter store, CancellationToken ct)
    {
        using var attempt = CancellationTokenSource.CreateLinkedTokenSource(ct);
        var ready = Channel.CreateBounded<ScriptedBatch>(new BoundedChannelOptions(2) { SingleReader = true, SingleWriter = true });
        var scripting = Task.Run(async () =>
        {
            try
            {
                var lagAt = 0L;
                while (!attempt.Token.IsCancellationRequested)
                {
                    var waited = Stopwatch.GetTimestamp();
                    var batch = await source.ReceiveAsync(sink.BatchSize, attempt.Token);
                    Stats.Spent(receive: Stopwatch.GetElapsedTime(waited));
                    if (batch.Count > 0) await ready.Writer.WriteAsync(Script(batch), attempt.Token);
                    if (Stopwatch.GetElapsedTime(lagAt) > LagEvery)
                    {
                        Stats.Lag(await source.LagAsync(attempt.Token));
                        lagAt = Stopwatch.GetTimestamp();
                    }
                }
                ready.Writer.TryComplete();
            }
            catch (Exception e) { ready.Writer.TryComplete(e); }
        }, attempt.Token);
        try
        {
            await foreach (var batch in ready.Reader.ReadAllAsync(attempt.Token)) await CommitAsync(source, store, batch, attempt.Token);
            await ready.Reader.Completion;   // the first stage's failure, if that ended it
        }
        finally
        {
            attempt.Cancel();
            await scripting.ContinueWith(_ => { }, TaskScheduler.Default);
        }
    }

    /// <summary>A batch the script has run on: the writes of each message that made some, and the messages that failed.</summary>
    internal sealed record ScriptedBatch(IReadOnlyList<IncomingMessage> Batch, List<MessageWrites> Messages, List<IncomingMessage> Owners,
        List<(IncomingMessage Message, string Id, string Reason)> Failed, int Skipped);

    internal ScriptedBatch Script(IReadOnlyList<IncomingMessage> batch)
    {
        var started = Stopwatch.GetTimestamp();
        var scripted = new ScriptedBatch(batch, new(batch.Count), new(batch.Count), [], 0);
        var skipped = 0;
        foreach (var m in batch)
        {
            if (SinkMessages.Read(m, _script!.UsesMessage, out var unreadable) is not { } read)
            {
                scripted.Failed.Add((m, SinkMessages.IdOf(m, null).Id, unreadable!));
                continue;
            }
            IReadOnlyList<MessageWrite> writes;
            using (read)
            {
                try { writes = _script!.Run(read.Body, read.Id, read.Description); }
                catch (ScriptRunException e)
                {
                    scripted.Failed.Add((m, read.Id, $"the script failed: {e.Message}"));
                    continue;
                }
            }
            if (writes.Count == 0) { skipped++; continue; }
            scripted.Messages.Add(new MessageWrites(read.Id, writes, read.Recheck));
            scripted.Owners.Add(m);
        }
        Stats.Spent(script: Stopwatch.GetElapsedTime(started));
        return scripted with { Skipped = skipped };
    }

    /// <summary>A scripted batch into the store, then the dead letters, then the acknowledgement. Whatever throws leaves the batch unacknowledged.</summary>
    internal async Task CommitAsync(IMessageSource source, IMessageWriter store, ScriptedBatch batch, CancellationToken ct)
    {
        var started = Stopwatch.GetTimestamp();
        var messages = batch.Messages;
        var failed = batch.Failed;
        var outcomes = messages.Count == 0 ? [] : await store.WriteAsync(LedgerOf(name), messages, ct);
        var written = Stopwatch.GetTimestamp();
        int applied = 0, writeCount = 0, redeliveries = 0;
        for (var i = 0; i < outcomes.Count; i++)
            switch (outcomes[i].Result)
            {
                case MessageWriteResult.Applied: applied++; writeCount += messages[i].Writes.Count; break;
                case MessageWriteResult.AlreadyApplied: redeliveries++; break;
                default: failed.Add((batch.Owners[i], messages[i].MessageId, $"the store refused {outcomes[i].Reason}")); break;
            }
        if (failed.Count > 0) await source.DeadLetterAsync(failed.Select(f => (f.Message, f.Reason)).ToList(), ct);
        var deadLettered = Stopwatch.GetTimestamp();
        await source.AcknowledgeAsync(batch.Batch, ct);
        Stats.Spent(write: Stopwatch.GetElapsedTime(started, written), deadLetter: Stopwatch.GetElapsedTime(written, deadLettered),
            acknowledge: Stopwatch.GetElapsedTime(deadLettered));
        Stats.Batch(batch.Batch.Count, applied, writeCount, redeliveries, batch.Skipped, failed.Select(f => (f.Id, f.Reason)).ToList());
        foreach (var (m, _, reason) in failed.Take(5)) log.LogWarning("queue sink {Sink}: dead-lettered a message from {Source}: {Reason}", name, m.Source, reason);
    }

    public async ValueTask DisposeAsync()
    {
        _stop.Cancel();
        try { await _loop; } catch (OperationCanceledException) { }
        _stop.Dispose();
    }
}
