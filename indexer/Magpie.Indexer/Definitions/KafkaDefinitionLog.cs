using System.Text.Json;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Indexes;
using Magpie.Embeddings.Connections;
using Magpie.Kafka;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Definitions;

/// <summary>
/// Kafka mode: definitions live in the compacted, single-partition <c>magpie.indexes</c> topic (key = index
/// name, value = definition JSON, null = deleted). Each process reads it from the beginning on its own
/// thread and follows it, so every indexer and query process converges on the same definitions; a write
/// returns once this process has read its own record back (a GET right after a PUT sees it). An index's history is a record of
/// its own, keyed <c>history:{name}</c> (no index name holds a ':'), whose value is the whole list: compaction keeps the latest.
/// A replacement built side by side says per shard that it caught up under <c>ready:{name}:{shard}</c> (value: its fingerprint):
/// one key per shard, so indexers writing at once never overwrite each other. Embedding connections are records of their own,
/// <c>connection:{name}</c>.
/// </summary>
public sealed class KafkaDefinitionLog(string bootstrapServers, ILogger log, EmbeddingConnections? connections = null) : IIndexDefinitionLog
{
    private static readonly TopicPartition Partition = new(Topics.Indexes, 0);
    private readonly CancellationTokenSource _stop = new();
    private readonly Lock _lock = new();
    private readonly List<(long Offset, TaskCompletionSource Seen)> _waiters = [];
    private IProducer<string, byte[]?>? _producer;
    private Thread? _reader;
    private long _next;   // the offset after the last record applied
    private const string HistoryPrefix = "history:", ReadyPrefix = "ready:", RetryPrefix = "retry:", ConnectionPrefix = "connection:";

    public EmbeddingConnections Connections { get; } = connections ?? new();

    public Task WriteConnectionAsync(string name, EmbeddingConnection? connection, CancellationToken ct) =>
        WriteRecordAsync(ConnectionPrefix + name, connection is null ? null : JsonSerializer.SerializeToUtf8Bytes(connection, IndexDefinitionStore.Json), ct);

    public event Action<string>? RetryAsked;

    /// <summary>A retry is a record of its own (value: when it was asked); only those read after this process caught up are acted on.</summary>
    public Task WriteRetryAsync(string name, CancellationToken ct) =>
        WriteRecordAsync(RetryPrefix + name, System.Text.Encoding.UTF8.GetBytes(DateTimeOffset.UtcNow.ToString("O")), ct);
    private readonly Dictionary<string, List<IndexVersion>> _history = [];
    private readonly Dictionary<string, Dictionary<int, string>> _ready = [];

    public async Task StartAsync(Action<string, IndexDefinition?> apply, CancellationToken ct)
    {
        await TopicAdmin.EnsureAsync(bootstrapServers, TopicAdmin.DefaultTopics(1, 1).Where(t => t.Name == Topics.Indexes), ct);
        var config = KafkaClients.Producer(bootstrapServers, "magpie-index-definitions");
        config.MessageTimeoutMs = 30_000;   // a PUT while Kafka is away fails instead of hanging
        _producer = KafkaClients.BuildProducer<string, byte[]?>(config, log);
        var caughtUp = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _reader = new Thread(() => Read(apply, caughtUp)) { IsBackground = true, Name = "magpie-index-definitions" };
        _reader.Start();
        await caughtUp.Task.WaitAsync(TimeSpan.FromSeconds(60), ct);
    }

    public Task WriteAsync(string name, IndexDefinition? definition, CancellationToken ct) =>
        WriteRecordAsync(name, definition is null ? null : JsonSerializer.SerializeToUtf8Bytes(definition, IndexDefinitionStore.Json), ct);

    public IReadOnlyList<IndexVersion> History(string name) { lock (_lock) return _history.TryGetValue(name, out var h) ? [.. h] : []; }

    public Task WriteHistoryAsync(string name, IReadOnlyList<IndexVersion> history, CancellationToken ct) =>
        WriteRecordAsync(HistoryPrefix + name, JsonSerializer.SerializeToUtf8Bytes(history, IndexDefinitionStore.Json), ct);

    public IReadOnlyDictionary<int, string> Ready(string name) { lock (_lock) return _ready.TryGetValue(name, out var r) ? new Dictionary<int, string>(r) : new Dictionary<int, string>(); }

    public Task WriteReadyAsync(string name, int shard, string version, CancellationToken ct) =>
        WriteRecordAsync($"{ReadyPrefix}{name}:{shard}", System.Text.Encoding.UTF8.GetBytes(version), ct);

    private async Task WriteRecordAsync(string key, byte[]? value, CancellationToken ct)
    {
        var delivered = await _producer!.ProduceAsync(Partition, new Message<string, byte[]?> { Key = key, Value = value }, ct);
        var seen = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_lock)
        {
            if (_next > delivered.Offset.Value) return;
            _waiters.Add((delivered.Offset.Value, seen));
        }
        await seen.Task.WaitAsync(TimeSpan.FromSeconds(30), ct);
    }

    private void Read(Action<string, IndexDefinition?> apply, TaskCompletionSource caughtUp)
    {
        var ct = _stop.Token;
        var config = KafkaClients.Consumer(bootstrapServers, $"magpie-index-definitions-{Guid.NewGuid():N}");
        config.IsolationLevel = IsolationLevel.ReadUncommitted;
        using var consumer = KafkaClients.BuildConsumer<string, byte[]?>(config, log);
        consumer.Assign(new TopicPartitionOffset(Partition, Offset.Beginning));
        long? startEnd = null;
        while (!ct.IsCancellationRequested)
        {
            try
            {
                startEnd ??= consumer.QueryWatermarkOffsets(Partition, TimeSpan.FromSeconds(5)).High.Value;
                if (!caughtUp.Task.IsCompleted && Volatile.Read(ref _next) >= startEnd) caughtUp.TrySetResult();
                if (consumer.Consume(TimeSpan.FromMilliseconds(200)) is not { IsPartitionEOF: false } r) continue;
                try
                {
                    if (r.Message.Key.StartsWith(HistoryPrefix, StringComparison.Ordinal))
                    {
                        var history = r.Message.Value is null ? [] : JsonSerializer.Deserialize<List<IndexVersion>>(r.Message.Value, IndexDefinitionStore.Json) ?? [];
                        lock (_lock) _history[r.Message.Key[HistoryPrefix.Length..]] = history;
                    }
                    else if (r.Message.Key.StartsWith(ConnectionPrefix, StringComparison.Ordinal))
                        Connections.Set(r.Message.Key[ConnectionPrefix.Length..],
                            r.Message.Value is null ? null : JsonSerializer.Deserialize<EmbeddingConnection>(r.Message.Value, IndexDefinitionStore.Json));
                    else if (r.Message.Key.StartsWith(RetryPrefix, StringComparison.Ordinal))
                    {
                        if (caughtUp.Task.IsCompleted && r.Message.Value is not null) RetryAsked?.Invoke(r.Message.Key[RetryPrefix.Length..]);
                    }
                    else if (r.Message.Key.StartsWith(ReadyPrefix, StringComparison.Ordinal))
                    {
                        var at = r.Message.Key.LastIndexOf(':');
                        var name = r.Message.Key[ReadyPrefix.Length..at];
                        if (int.TryParse(r.Message.Key[(at + 1)..], out var shard))
                            lock (_lock)
                            {
                                var ready = _ready.TryGetValue(name, out var kept) ? kept : _ready[name] = [];
                                if (r.Message.Value is null) ready.Remove(shard); else ready[shard] = System.Text.Encoding.UTF8.GetString(r.Message.Value);
                            }
                    }
                    else apply(r.Message.Key, r.Message.Value is null ? null : JsonSerializer.Deserialize<IndexDefinition>(r.Message.Value, IndexDefinitionStore.Json));
                }
                catch (JsonException e) { log.LogError("magpie.indexes offset {Offset}: not a definition ({Error}); skipped", r.Offset.Value, e.Message); }
                Seen(r.Offset.Value + 1);
            }
            catch (KafkaException e) when (!ct.IsCancellationRequested)
            {
                log.LogWarning("reading magpie.indexes: {Error}", e.Error.Reason);
                Waits.Pause(TimeSpan.FromSeconds(1), ct);
            }
        }
        consumer.Close();
    }

    private void Seen(long next)
    {
        lock (_lock)
        {
            _next = next;
            foreach (var w in _waiters.Where(w => w.Offset < next)) w.Seen.TrySetResult();
            _waiters.RemoveAll(w => w.Offset < next);
        }
    }

    public ValueTask DisposeAsync()
    {
        _stop.Cancel();
        _reader?.Join(TimeSpan.FromSeconds(10));
        _producer?.Flush(TimeSpan.FromSeconds(5));
        _producer?.Dispose();
        Connections.Dispose();
        return ValueTask.CompletedTask;
    }
}
