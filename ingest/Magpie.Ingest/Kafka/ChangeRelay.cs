using System.Buffers;
using System.Collections.Concurrent;
using System.Text;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Changes;
using Magpie.Ingest.Changes;
using Magpie.Kafka;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// The outbox relay: tails the committed change log and publishes each change to <c>magpie.changes</c>
/// (key = document id). The position advances only after Kafka confirmed every message before it, so a
/// crash or an outage re-sends (at-least-once) and never skips. Writes never wait for this: while Kafka
/// is down the producer holds the messages (no delivery timeout) and the log keeps growing. A producer that gets no delivery
/// report for <see cref="IngestOptions.RelayStallTimeout"/> while Kafka answers is given up and replaced (see
/// <see cref="AwaitDeliveredAsync"/>).
/// A partitioned store's relay (<paramref name="partition"/>) publishes to its own partition of the topic and keeps the offset
/// it reached there with its position.
/// </summary>
public sealed class ChangeRelay(ChangeLogTail tail, ChangeLogReaders readers, IngestOptions options, ILogger<ChangeRelay> logger, int? partition = null)
    : BackgroundService, IRelayedChanges
{
    private readonly RelayPosition _position = new(Path.Combine(options.DataDir, "relay"));
    private long _published;
    private long _producerRebuilds;
    /// <summary>The saved position's address, kept here so compaction asks without reading the file.</summary>
    private long _durableAddress;
    private long _confirmedEtag = -1;
    private readonly Signal _confirmed = new();
    private readonly ConcurrentDictionary<int, long> _confirmedEnds = new();

    /// <summary>
    /// Waits until Kafka confirmed every change up to <paramref name="etag"/>; returns, per partition of
    /// <c>magpie.changes</c>, the offset after the last change confirmed by then (what an index must reach to
    /// include that write), or null on timeout. Ends are known for what this process published since it started.
    /// </summary>
    public async Task<IReadOnlyDictionary<int, long>?> PublishedAsync(long etag, TimeSpan timeout, CancellationToken ct)
    {
        if (!await Waits.UntilAsync(() => Interlocked.Read(ref _confirmedEtag) >= etag, timeout, ct, _confirmed)) return null;
        return new Dictionary<int, long>(_confirmedEnds);
    }

    /// <summary>
    /// The offsets holding everything stored now: the ends confirmed once the relay has published the log's last etag. Nothing
    /// published since this process started means everything was published before it (the topic's end, read earlier, covers it).
    /// </summary>
    public async Task<IReadOnlyDictionary<string, long>?> EndsAsync(TimeSpan timeout, CancellationToken ct)
    {
        var last = tail.LastEtag;
        if (ConfirmedEtag() >= last && _confirmedEnds.IsEmpty) return new Dictionary<string, long>();
        var ends = ConfirmedEtag() >= last ? new Dictionary<int, long>(_confirmedEnds) : await PublishedAsync(last, timeout, ct);
        return ends?.ToDictionary(e => e.Key.ToString(System.Globalization.CultureInfo.InvariantCulture), e => e.Value);
    }

    /// <summary>What the relay has done, for <c>GET /stats/pipeline</c>.</summary>
    public object Status() => new
    {
        published = Interlocked.Read(ref _published),
        confirmedEtag = ConfirmedEtag(),
        lagEtags = Lag(),
        producerRebuilds = Interlocked.Read(ref _producerRebuilds),
    };

    /// <summary>Waits until Kafka confirmed every change written so far (a partition handed to another process); false on timeout.</summary>
    public async Task<bool> DrainAsync(TimeSpan timeout, CancellationToken ct) =>
        tail.LastEtag <= ConfirmedEtag() || await PublishedAsync(tail.LastEtag, timeout, ct) is not null;

    /// <summary>Changes written but not yet confirmed by Kafka (0 = caught up).</summary>
    public long Lag() => Math.Max(0, tail.LastEtag - ConfirmedEtag());

    /// <summary>A partition's relay: the offset after its last confirmed message there (as saved before, until it publishes).</summary>
    private long? ConfirmedEnd() => partition is not { } p ? null
        : _confirmedEnds.TryGetValue(p, out var end) ? end : _position.Load()?.End;

    private long ConfirmedEtag()
    {
        var confirmed = Interlocked.Read(ref _confirmedEtag);
        return confirmed >= 0 ? confirmed : _position.Load()?.Etag ?? 0;
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        await Task.Yield();
        // What Kafka confirmed is what the relay resumes from: the change log keeps everything after it.
        _durableAddress = _position.Load()?.Address ?? 0;
        using var tracked = readers.Track("kafka relay", () => Interlocked.Read(ref _durableAddress));
        var backoff = options.Retry.Start();
        await SupervisedLoop.RunAsync(async ct =>
        {
            var published = Interlocked.Read(ref _published);
            try { await RunAsync(ct); }
            finally { if (Interlocked.Read(ref _published) != published) backoff.Reset(); }   // it got somewhere before failing
        }, backoff, (e, delay) =>
        {
            logger.LogWarning("change relay stopped ({Error}); resuming from the last confirmed position in {Delay}", e.Message, delay);
            return ValueTask.CompletedTask;
        }, stoppingToken);
    }

    private async Task RunAsync(CancellationToken ct)
    {
        var servers = options.KafkaBootstrapServers!;
        await TopicAdmin.EnsureAsync(servers, TopicAdmin.DefaultTopics(options.KafkaPartitions, options.KafkaReplicationFactor), ct);
        var config = KafkaClients.Producer(servers, "magpie-relay");
        // A delivery report is only counted (error, partition, offset): by default the client copies each message's key, value,
        // headers and timestamp back into it, a second copy of every change the relay sends.
        config.DeliveryReportFields = "none";
        var producer = KafkaClients.BuildProducer<string, byte[]>(config, logger);
        try { await PublishAsync(producer, servers, ct); }
        finally { Retire(producer); }
    }

    private async Task PublishAsync(IProducer<string, byte[]> producer, string servers, CancellationToken ct)
    {
        var from = _position.Load()?.Address ?? tail.BeginAddress;
        logger.LogInformation("change relay publishing to {Topic} from log address {Address}", Topics.Changes, from);
        var buffer = new ArrayBufferWriter<byte>(4096);
        await foreach (var read in tail.ReadAsync(from, options.RelayBatchSize, ct))
        {
            var batch = read.Entries;
            if (batch.Count == 0)
            {
                _position.Save(read.NextAddress, ConfirmedEtag(), ConfirmedEnd());   // only skipped copies: nothing to send, but past them
                Interlocked.Exchange(ref _durableAddress, read.NextAddress);
                continue;
            }
            var delivered = new BatchDelivery(batch.Count);
            foreach (var entry in batch)
            {
                var record = entry.Decode();
                buffer.ResetWrittenCount();
                ChangeEventJson.Write(buffer, record.Id, record.Collection, record.Etag, record.Op, record.LastModified, record.Document);
                var message = new Message<string, byte[]>
                {
                    Key = record.Id,
                    Value = buffer.WrittenSpan.ToArray(),
                    Headers = new Headers
                    {
                        { Topics.Headers.Op, Encoding.UTF8.GetBytes(ChangeEventJson.OpName(record.Op)) },
                        { Topics.Headers.Collection, Encoding.UTF8.GetBytes(record.Collection) },
                    },
                };
                if (partition is { } p) producer.Produce(new TopicPartition(Topics.Changes, p), message, delivered.Report);
                else producer.Produce(Topics.Changes, message, delivered.Report);
            }
            await AwaitDeliveredAsync(delivered, servers, ct);
            foreach (var (partition, end) in delivered.Ends) _confirmedEnds.AddOrUpdate(partition, end, (_, known) => Math.Max(known, end));
            var lastEtag = batch[^1].Decode().Etag;
            _position.Save(read.NextAddress, lastEtag, ConfirmedEnd());
            Interlocked.Exchange(ref _durableAddress, read.NextAddress);
            Interlocked.Exchange(ref _confirmedEtag, lastEtag);
            _confirmed.Raise();
            Interlocked.Add(ref _published, batch.Count);
        }
    }

    /// <summary>
    /// Waits (awaited, not flushed: a blocking Flush would pin a thread-pool thread for as long as Kafka is away) until Kafka
    /// acknowledged the whole batch. While Kafka is away that may take any time. But a batch that gets no report at all for
    /// <see cref="IngestOptions.RelayStallTimeout"/> while Kafka answers for the topic has a producer that is not getting
    /// anywhere: a CI run saw the relay publish nothing for two minutes after a broker restart, and librdkafka has open reports
    /// of clients that stay stuck after one (#5456). The batch then fails, and the relay resends from its last confirmed
    /// position with a new producer: at-least-once already allows the resent copies, and each producer keeps etag order per
    /// partition, so every change's first arrival stays in order.
    /// </summary>
    private async Task AwaitDeliveredAsync(BatchDelivery delivered, string servers, CancellationToken ct)
    {
        var stall = options.RelayStallTimeout;
        var check = TimeSpan.FromTicks(Math.Clamp(stall.Ticks / 4, TimeSpan.FromMilliseconds(100).Ticks, TimeSpan.FromSeconds(5).Ticks));
        var (reported, since, away) = (delivered.Reported, DateTime.UtcNow, false);
        while (true)
        {
            try
            {
                await delivered.Completion.WaitAsync(check, ct);
                return;
            }
            catch (TimeoutException) { }
            if (delivered.Reported != reported) (reported, since) = (delivered.Reported, DateTime.UtcNow);
            if (DateTime.UtcNow - since < stall) continue;
            if (!await TopicAdmin.AnswersForAsync(servers, Topics.Changes, TimeSpan.FromSeconds(5)))
            {
                if (!away) logger.LogInformation("change relay: Kafka does not answer for {Topic}; {Pending} changes wait in the producer", Topics.Changes, delivered.Pending);
                (since, away) = (DateTime.UtcNow, true);
                continue;
            }
            Interlocked.Increment(ref _producerRebuilds);
            throw new TimeoutException($"no delivery report for {stall.TotalSeconds:N0} s while Kafka answers for {Topics.Changes} ({delivered.Pending} of the batch's changes unconfirmed); the producer is replaced");
        }
    }

    /// <summary>
    /// Closes a producer off the relay's path: one given up on may still hold messages, and destroying a librdkafka client
    /// can wait on its brokers. Its late deliveries are harmless (at-least-once); its messages are resent by the next one.
    /// </summary>
    private void Retire(IProducer<string, byte[]> producer) => _ = Task.Run(() =>
    {
        try { producer.Dispose(); }
        catch (Exception e) { logger.LogWarning("change relay: closing a producer failed ({Error})", e.Message); }
    });

    /// <summary>Completes when Kafka has acknowledged every message of a batch; fails on the first delivery error. Tracks where each partition ends.</summary>
    private sealed class BatchDelivery(int count)
    {
        private int _pending = count;
        private int _reported;

        /// <summary>Delivery reports received so far, successes and errors.</summary>
        public int Reported => Volatile.Read(ref _reported);

        public int Pending => Volatile.Read(ref _pending);
        private readonly TaskCompletionSource _done = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly Dictionary<int, long> _ends = [];

        public Task Completion => _done.Task;

        /// <summary>Per partition, the offset after the last acknowledged message (read after <see cref="Completion"/>).</summary>
        public IReadOnlyDictionary<int, long> Ends => _ends;

        public void Report(DeliveryReport<string, byte[]> report)
        {
            Interlocked.Increment(ref _reported);
            if (report.Error.IsError) { _done.TrySetException(new KafkaException(report.Error)); return; }
            lock (_ends) _ends[report.Partition.Value] = Math.Max(_ends.GetValueOrDefault(report.Partition.Value), report.Offset.Value + 1);
            if (Interlocked.Decrement(ref _pending) == 0) _done.TrySetResult();
        }
    }
}
