using System.Diagnostics;
using Magpie.Contracts.Documents;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Delivery;
using Magpie.Scripting;
using Microsoft.Extensions.Logging;
using Magpie.EtlSinks.Runners;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// Runs one queue sink: takes a batch from the broker, runs the script on each message, writes every message's writes in one
/// store commit (each message all or nothing, recorded in the sink's ledger so a redelivery is not applied twice), sends the
/// messages that failed to the dead letters with the reason, and only then acknowledges the batch. At-least-once delivery with
/// idempotent writes: a crash anywhere leaves the unacknowledged messages in the broker, and the ledger recognises those
/// already written; store trouble is retried like broker trouble, with a new connection.
/// </summary>
public sealed class QueueSinkRunner(string name, QueueSinkDefinition sink, EtlConnection connection, IMessageWriter? writer, EtlOptions options, ILogger log)
    : BrokerRunner<IMessageSource>("queue sink", name, sink.Connection, sink.Reconnect, log), IRunner<QueueSinkStatsSnapshot>
{
    private static readonly TimeSpan LagEvery = TimeSpan.FromSeconds(2);

    private SinkScript? _script;

    /// <summary>The ledger a sink's message ids are recorded in.</summary>
    public static string LedgerOf(string sink) => "sink:" + sink;

    public QueueSinkStats Stats { get; } = new(name, sink.Sources);

    protected override RunnerStatus Status => Stats;

    public QueueSinkStatsSnapshot Snapshot() => Stats.Snapshot();

    /// <summary>Where sources come from instead of the connection (tests: a broker that misbehaves on cue).</summary>
    internal Func<IMessageSource>? Sources { get; init; }

    protected override string? Prepare()
    {
        if (writer is null)
            return "this process has no document store to write to: run the sinks with ingest (--target all or ingest,sinks), or set IngestUrl";
        try { _script = SinkScript.Compile(sink.Script, options.ScriptLimits); }
        catch (Exception e) { return $"sink can't start: {e.Message}"; }
        return null;
    }

    protected override IMessageSource CreateClient() =>
        Sources?.Invoke() ?? (connection.IsKafka ? new KafkaSource(connection, sink, Name) : new RabbitMqSource(connection, sink, Name));

    protected override Task OpenAsync(IMessageSource source, CancellationToken ct) => source.OpenAsync(ct);

    /// <summary>Receiving + scripting the next batch while the store commits this one; writing, dead-lettering and acknowledging in order.</summary>
    protected override Task WorkAsync(IMessageSource source, CancellationToken ct) => InTwoStagesAsync<ScriptedBatch>(async (ready, ct) =>
    {
        var lagAt = 0L;
        while (!ct.IsCancellationRequested)
        {
            var waited = Stopwatch.GetTimestamp();
            var batch = await source.ReceiveAsync(sink.BatchSize, ct);
            Stats.Spent(receive: Stopwatch.GetElapsedTime(waited));
            if (batch.Count > 0) await ready(Script(batch));
            if (Stopwatch.GetElapsedTime(lagAt) > LagEvery)
            {
                Stats.Lag(await source.LagAsync(ct));
                lagAt = Stopwatch.GetTimestamp();
            }
        }
    }, (batch, ct) => CommitAsync(source, writer!, batch, ct), ct);

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
        var outcomes = messages.Count == 0 ? [] : await store.WriteAsync(LedgerOf(Name), messages, ct);
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
        foreach (var (m, _, reason) in failed.Take(5)) Log.LogWarning("queue sink {Sink}: dead-lettered a message from {Source}: {Reason}", Name, m.Source, reason);
    }
}
