using System.Globalization;
using System.Runtime.InteropServices;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Embeddings.Caching;
using Magpie.Embeddings.Connections;
using Magpie.Kafka;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Indexing;

/// <summary>
/// Kafka mode: the indexers' embedding caches shared through the compacted <c>magpie.embeddings</c> (key = the cache's id and the
/// text's key, value = the vector's float32s). Each vector an indexer's cache keeps is produced there; each indexer reads the
/// topic from the beginning when it starts and follows it, keeping what the others made. So an indexer that starts with an empty
/// disk (a container recreated without its volume), or takes over shards another built, asks the model for none of the texts
/// embedded anywhere before: state in a topic, restorable, as Kafka Streams keeps it. Until the records there at its start are
/// read (<see cref="Restored"/>, at most <see cref="RestoreWait"/>), indexing waits before asking a model.
/// </summary>
public sealed class EmbeddingCacheTopic(string bootstrapServers, int partitions, short replicationFactor, EmbeddingConnections connections, ILogger log)
    : IEmbeddingCacheShare, IHostedService, IDisposable
{
    /// <summary>The longest indexing waits for the shared vectors before embedding anyway (a slow or absent broker costs work, not correctness).</summary>
    public static readonly TimeSpan RestoreWait = TimeSpan.FromMinutes(2);

    private readonly CancellationTokenSource _stop = new();
    private readonly TaskCompletionSource _restored = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private IProducer<string, byte[]>? _producer;
    private Thread? _reader;
    private long _absorbed;

    public Task Restored => _restored.Task;

    public async Task StartAsync(CancellationToken ct)
    {
        await TopicAdmin.EnsureAsync(bootstrapServers, TopicAdmin.DefaultTopics(partitions, replicationFactor).Where(t => t.Name == Topics.Embeddings), ct);
        _producer = KafkaClients.BuildProducer<string, byte[]>(KafkaClients.Producer(bootstrapServers, "magpie-embeddings"), log);
        connections.ShareThrough(this);
        _ = Task.Delay(RestoreWait, _stop.Token).ContinueWith(t =>
        {
            if (!t.IsCanceled && _restored.TrySetResult()) log.LogWarning("magpie.embeddings not read to its end in {Wait}: indexing embeds without waiting for it", RestoreWait);
        }, TaskScheduler.Default);
        _reader = new Thread(Read) { IsBackground = true, Name = "magpie-embeddings" };
        _reader.Start();
    }

    public void Publish(string cacheId, UInt128 key, float[] vector)
    {
        if (_producer is not { } producer) return;
        try
        {
            producer.Produce(Topics.Embeddings, new Message<string, byte[]> { Key = KeyOf(cacheId, key), Value = MemoryMarshal.AsBytes(vector.AsSpan()).ToArray() },
                report => { if (report.Error.IsError) log.LogWarning("a vector was not shared on magpie.embeddings: {Error}", report.Error.Reason); });
        }
        catch (ProduceException<string, byte[]> e)
        {
            // Only a cache: a vector not shared is made again where it is missing.
            log.LogWarning("a vector was not shared on magpie.embeddings: {Error}", e.Error.Reason);
        }
    }

    /// <summary><c>{cache id}:{the text's key in hex}</c>.</summary>
    private static string KeyOf(string cacheId, UInt128 key) => $"{cacheId}:{key:x32}";

    private void Read()
    {
        var ct = _stop.Token;
        var config = KafkaClients.Consumer(bootstrapServers, $"magpie-embeddings-{Guid.NewGuid():N}");
        config.IsolationLevel = IsolationLevel.ReadUncommitted;
        using var consumer = KafkaClients.BuildConsumer<string, byte[]?>(config, log);
        Dictionary<TopicPartition, long>? ends = null;
        while (!ct.IsCancellationRequested)
        {
            try
            {
                if (ends is null)
                {
                    ends = StartEnds(consumer);
                    consumer.Assign(ends.Keys.Select(p => new TopicPartitionOffset(p, Offset.Beginning)));
                }
                if (!_restored.Task.IsCompleted && ends.All(e => e.Value <= 0 || consumer.Position(e.Key).Value >= e.Value) && _restored.TrySetResult())
                    log.LogInformation("magpie.embeddings read to where it stood at the start: {Absorbed} vectors taken", Interlocked.Read(ref _absorbed));
                if (consumer.Consume(TimeSpan.FromMilliseconds(200)) is not { IsPartitionEOF: false, Message: { Key: { } key, Value: { } value } }) continue;
                Absorb(key, value);
            }
            catch (KafkaException e) when (!ct.IsCancellationRequested)
            {
                log.LogWarning("reading magpie.embeddings: {Error}", e.Error.Reason);
                Waits.Pause(TimeSpan.FromSeconds(1), ct);
            }
        }
        consumer.Close();
    }

    /// <summary>Each partition of the topic and its end offset now: what must be read before the restore is complete.</summary>
    private Dictionary<TopicPartition, long> StartEnds(IConsumer<string, byte[]?> consumer)
    {
        using var admin = new AdminClientBuilder(KafkaClients.Admin(bootstrapServers)).Build();
        var topic = admin.GetMetadata(Topics.Embeddings, TimeSpan.FromSeconds(10)).Topics.Single(t => t.Topic == Topics.Embeddings);
        if (topic.Error.IsError) throw new KafkaException(topic.Error);
        return topic.Partitions.Select(p => new TopicPartition(Topics.Embeddings, p.PartitionId))
            .ToDictionary(p => p, p => consumer.QueryWatermarkOffsets(p, TimeSpan.FromSeconds(10)).High.Value);
    }

    private void Absorb(string key, byte[] value)
    {
        var at = key.IndexOf(':');
        if (at < 0 || value.Length is 0 or > 65_536 * 4 || value.Length % 4 != 0
            || !UInt128.TryParse(key.AsSpan(at + 1), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out var textKey))
        {
            log.LogWarning("magpie.embeddings: a record that is not a vector (key '{Key}', {Bytes} bytes); skipped", key.Length > 60 ? key[..60] : key, value.Length);
            return;
        }
        try
        {
            if (connections.CacheById(key[..at]) is { } cache && cache.Absorb(textKey, MemoryMarshal.Cast<byte, float>(value).ToArray()))
                Interlocked.Increment(ref _absorbed);
        }
        catch (ArgumentException) { log.LogWarning("magpie.embeddings: '{Id}' is not a cache's id; skipped", key[..at]); }
    }

    public Task StopAsync(CancellationToken ct)
    {
        _stop.Cancel();
        _reader?.Join(TimeSpan.FromSeconds(10));
        _producer?.Flush(TimeSpan.FromSeconds(5));
        return Task.CompletedTask;
    }

    public void Dispose()
    {
        _producer?.Dispose();
        _stop.Dispose();
    }
}
