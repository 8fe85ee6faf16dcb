using Confluent.Kafka;
using Magpie.Indexer.Indexing.Stages;
using Magpie.Kafka;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// One map stage attempt's way onto a mapped topic, for one source partition: a transactional producer whose id names the
/// (topic, source partition), so opening it fences every earlier one — another indexer that still had the partition, or this
/// process's previous attempt — and aborts whatever transaction it left open. Each batch is one transaction: its mapped
/// changes, its watermarks and the map stage's progress (the offset of <c>&lt;group&gt;.map-progress</c>) commit together or
/// not at all, and readers read committed only. Without it a failed attempt's changes could still land (acknowledged
/// after the failure, or queued in the client while the broker was down) while the next attempt, resuming from the local
/// record, never knew of them: a document moved to another key stayed counted under the one it left.
/// This is Kafka Streams' exactly-once scheme: produce and input position in one transaction, zombies fenced by id.
/// </summary>
public sealed class MappedPublisher : IDisposable
{
    /// <summary>How long the broker lets a transaction stay open before aborting it: bounds how long a crashed publisher's
    /// open transaction holds read-committed readers of the topic back, and how long a stop waits for a commit.</summary>
    private const int TransactionTimeoutMs = 20_000;

    /// <summary>
    /// How long a batch waits for its transaction to end (offsets sent, commit) before the attempt gives up on this publisher.
    /// librdkafka 2.15.1 can block in <c>send_offsets_to_transaction</c> for good, past its own timeout, when the group
    /// coordinator went away mid-transaction (confluentinc/librdkafka#5456, #5511): seen here after a broker restart, an indexer's
    /// map stage waited there for over seven minutes, and every index of that process stopped starting on its partitions.
    /// </summary>
    internal static readonly TimeSpan EndTimeout = TimeSpan.FromSeconds(45);

    private readonly ILogger _log;
    /// <summary>A native call left running (past <see cref="EndTimeout"/>, or by a stop): the producer is not touched again until it returns.</summary>
    private Task? _stuck;

    private readonly IProducer<string, byte[]> _producer;
    private readonly IConsumerGroupMetadata _progressGroup;
    private readonly string _topic;
    private readonly int _sourcePartition, _partitions;
    private readonly Func<string, int> _partitionOf;
    private bool _inTransaction;

    /// <summary>Blocks until the broker fenced earlier publishers of the same source partition (call off the thread pool's hot path).</summary>
    internal MappedPublisher(string bootstrapServers, string topic, int sourcePartition, int partitions, Func<string, int> partitionOf,
        IConsumerGroupMetadata progressGroup, ILogger log)
    {
        (_topic, _sourcePartition, _partitions, _partitionOf, _progressGroup, _log) = (topic, sourcePartition, partitions, partitionOf, progressGroup, log);
        var config = KafkaClients.Producer(bootstrapServers, "magpie-indexer-mapped");
        config.TransactionalId = $"magpie-map.{topic}.{sourcePartition}";
        config.TransactionTimeoutMs = TransactionTimeoutMs;
        // A transaction bounds how long its messages may wait (the client default of "forever" is refused with one).
        config.MessageTimeoutMs = TransactionTimeoutMs - 1_000;
        _producer = KafkaClients.BuildProducer<string, byte[]>(config, log);
        try { _producer.InitTransactions(TimeSpan.FromSeconds(30)); }
        catch
        {
            _producer.Dispose();
            throw;
        }
    }

    /// <summary>
    /// Publishes a batch's changes and then the watermark of the source partition (next offset <paramref name="next"/>) to every
    /// partition, with the progress, in one transaction; returns once it committed. On failure the transaction is aborted
    /// (none of it is ever read) and the exception surfaces: the attempt ends and the next one fences this publisher.
    /// </summary>
    /// <param name="loads">Maps that <c>load()</c>: how far this map stage has followed every partition's changes (its referrers
    /// mapped again), carried in the watermark so reducers count it for staleness.</param>
    public async Task PublishAsync(IReadOnlyList<MappedChange> changes, long etag, long next, CancellationToken ct, IReadOnlyDictionary<string, long>? loads = null)
    {
        var now = DateTimeOffset.UtcNow;
        _producer.BeginTransaction();
        _inTransaction = true;
        try
        {
            var sent = new List<Task>(changes.Count + _partitions);
            foreach (var change in changes)
                sent.Add(_producer.ProduceAsync(new TopicPartition(_topic, _partitionOf(change.Key)),
                    new Message<string, byte[]> { Key = Engine.StateEntry.IdOf(change.Key, change.Source), Value = MappedTopics.ChangeMessage(change, etag, now, _sourcePartition) }, ct));
            var mark = MappedTopics.WatermarkMessage(_sourcePartition, next, etag, now, loads);
            for (var p = 0; p < _partitions; p++)
                sent.Add(_producer.ProduceAsync(new TopicPartition(_topic, p), new Message<string, byte[]> { Key = $"{MappedTopics.Watermark}/{_sourcePartition}", Value = mark }, ct));
            await Task.WhenAll(sent);
            // The native calls can't be cancelled half-way, and librdkafka's own timeouts do not always hold here: a stop, or
            // EndTimeout, leaves them running and this publisher with them.
            var ending = Task.Run(() =>
            {
                _producer.SendOffsetsToTransaction([new TopicPartitionOffset(_topic, _sourcePartition, next)], _progressGroup, TimeSpan.FromSeconds(30));
                _producer.CommitTransaction(TimeSpan.FromSeconds(30));
            }, CancellationToken.None);
            try { await ending.WaitAsync(EndTimeout, ct); }
            catch (Exception e) when (e is TimeoutException or OperationCanceledException)
            {
                // Left to the broker: the next attempt's publisher fences this one and its open transaction is aborted (or, had it
                // committed after all, that attempt takes over from the progress it committed). Either way none of it is read twice.
                (_stuck, _inTransaction) = (ending, false);
                if (e is TimeoutException)
                    throw new TimeoutException($"the transaction to {_topic} for source partition {_sourcePartition} did not end within {EndTimeout.TotalSeconds:N0} s (the broker's coordinators unreachable)");
                throw;
            }
            _inTransaction = false;
        }
        catch
        {
            Abort();
            throw;
        }
    }

    private void Abort()
    {
        if (!_inTransaction) return;
        _inTransaction = false;
        // Best effort: if the broker cannot be reached, the transaction times out there, or the next publisher's fencing aborts it.
        try { _producer.AbortTransaction(TimeSpan.FromSeconds(5)); }
        catch (KafkaException) { }
    }

    public void Dispose()
    {
        if (_stuck is { IsCompleted: false } stuck)
        {
            // Destroying a client while one of its calls runs is unsafe: it goes when (if ever) that call returns.
            _log.LogInformation("the transactional producer of {Topic} (source partition {Partition}) is still in a librdkafka call; it is closed when the call returns",
                _topic, _sourcePartition);
            stuck.ContinueWith(_ =>
            {
                _producer.Dispose();
                _log.LogInformation("the transactional producer of {Topic} (source partition {Partition}) returned and is closed", _topic, _sourcePartition);
            }, TaskScheduler.Default);
            return;
        }
        Abort();
        _producer.Dispose();
    }
}
