using Magpie.Indexer.Indexing.Stages;
using System.Buffers;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Confluent.Kafka;
using Confluent.Kafka.Admin;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Kafka;
using Magpie.Kafka.Changes;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// Kafka mode's <c>magpie.mapped.&lt;index&gt;</c> topics: the map stage of each <c>magpie.changes</c> partition publishes
/// what each document contributes to each reduce key, into the partition of that key — so each key has exactly one
/// owner, the indexer owning that partition number (the same consumer-group assignment as the changes). Messages are
/// change events (collection <see cref="Mapped"/>: id = source document, document = <c>{"key","values"}</c>) keyed by
/// (reduce key, source document) on a compacted topic, so the latest message per pair is the reduce state and a new
/// owner rebuilds it by reading the partition from the start. After each batch a <see cref="Watermark"/> to every
/// partition says how far that map stage has published: what the reduce side's staleness is measured against.
/// Each mapped change also names its source partition, and with each batch the map stage's position is committed as the
/// offset of group <c>&lt;group&gt;.map-progress</c> on (mapped topic, source partition), in the batch's transaction
/// (<see cref="MappedPublisher"/>: a batch's changes, watermarks and progress land together or not at all, and readers read
/// committed only): a map stage that takes over a
/// partition another indexer has moved past rebuilds which keys each document contributes to from the topic itself
/// (<see cref="RestoreAsync"/>, the way Kafka Streams restores a store from its changelog) and resumes there.
/// The topic name carries the indexer group (each deployment maps and reduces on its own; two groups never mix their
/// messages or watermarks) and the definition's fingerprint (a changed definition starts on a fresh topic).
/// </summary>
public sealed class MappedTopics(string bootstrapServers, string group, int partitions, short replicationFactor, ILogger log) : IDisposable
{
    public const string Mapped = "@mapped", Watermark = "@watermark";

    /// <summary>Reads the map stages' progress (their publishers commit it in their transactions); never joins its group, so
    /// its group metadata carries no membership and a publisher of any process may commit with it.</summary>
    private readonly Lazy<IConsumer<Ignore, Ignore>> _progress = new(() =>
        KafkaClients.BuildConsumer<Ignore, Ignore>(KafkaClients.Consumer(bootstrapServers, $"{group}.map-progress"), log));

    public string TopicOf(string index, IndexDefinition definition)
    {
        static string Safe(string s, int max)
        {
            var safe = new string(s.Select(c => char.IsAsciiLetterOrDigit(c) || c is '.' or '_' or '-' ? c : '_').ToArray());
            return safe.Length > max ? safe[..max] : safe;
        }
        return $"magpie.mapped.{Safe(group, 60)}.{Safe(index, 120)}.{definition.Fingerprint()[..8].ToLowerInvariant()}";
    }

    public Task EnsureAsync(string topic, CancellationToken ct) => TopicAdmin.EnsureAsync(bootstrapServers,
        [new TopicSpecification { Name = topic, NumPartitions = partitions, ReplicationFactor = replicationFactor, Configs = new() { ["cleanup.policy"] = "compact" } }], ct);

    /// <summary>
    /// Deletes the mapped topic of a version no longer in use (replaced by its side-by-side rebuild, or its index deleted). Every
    /// indexer retiring that version asks; the first one deletes it.
    /// </summary>
    public async Task DeleteAsync(string topic)
    {
        using var admin = new AdminClientBuilder(KafkaClients.Admin(bootstrapServers)).Build();
        try
        {
            await admin.DeleteTopicsAsync([topic]);
            log.LogInformation("deleted {Topic}: no index version uses it anymore", topic);
        }
        catch (DeleteTopicsException e) when (e.Results.All(r => r.Error.Code == ErrorCode.UnknownTopicOrPart)) { }
    }

    /// <summary>The reduce side of shard <paramref name="partition"/> reads this.</summary>
    public IChangeFeed FeedOf(string topic, int partition) => new KafkaChangeFeed(bootstrapServers, topic, partition);

    /// <summary>The partition of a reduce key: a stable hash (only Magpie produces to these topics), the same in every process.</summary>
    public int PartitionOf(string key) => (int)(BitConverter.ToUInt32(SHA256.HashData(Encoding.UTF8.GetBytes(key)), 0) % (uint)partitions);

    /// <summary>
    /// The map stage's publisher for <paramref name="sourcePartition"/>: fences every earlier one (blocks until the broker did,
    /// up to 30 s), so from here on only what this one commits is added to the topic for that partition. A stop does not wait
    /// for the broker, nor does the attempt wait past <see cref="MappedPublisher.EndTimeout"/>: a publisher opened after that is closed at once.
    /// </summary>
    public async Task<MappedPublisher> OpenPublisherAsync(string topic, int sourcePartition, CancellationToken ct)
    {
        var opening = Task.Run(() => new MappedPublisher(bootstrapServers, topic, sourcePartition, partitions, PartitionOf, _progress.Value.ConsumerGroupMetadata, log),
            CancellationToken.None);
        try { return await opening.WaitAsync(MappedPublisher.EndTimeout, ct); }
        catch (Exception e) when (e is OperationCanceledException or TimeoutException)
        {
            _ = opening.ContinueWith(t => { if (t.IsCompletedSuccessfully) t.Result.Dispose(); }, TaskScheduler.Default);
            throw;
        }
    }

    /// <summary>How far any indexer's map stage of <paramref name="sourcePartition"/> has published (its next offset), if one has.</summary>
    public Task<long?> PublishedAsync(string topic, int sourcePartition, CancellationToken ct) => Task.Run(() =>
    {
        var committed = _progress.Value.Committed([new TopicPartition(topic, sourcePartition)], TimeSpan.FromSeconds(30)).Single();
        return committed.Offset.Value >= 0 ? committed.Offset.Value : (long?)null;
    }, CancellationToken.None).WaitAsync(MappedPublisher.EndTimeout, ct);   // a coordinator request, which librdkafka may not time out (see EndTimeout)

    /// <summary>
    /// Which reduce keys each document of <paramref name="sourcePartition"/> contributes to, as the reducers hold it: the latest
    /// message per (key, document) in every partition of the topic, up to its end when asked, removals left out.
    /// </summary>
    public Task<Dictionary<string, HashSet<string>>> RestoreAsync(string topic, int sourcePartition, CancellationToken ct) => Task.Run(() =>
    {
        var latest = new Dictionary<string, (string Key, string Source)?>(StringComparer.Ordinal);
        var config = KafkaClients.Consumer(bootstrapServers, $"magpie-mapped-restore-{Guid.NewGuid():N}");
        config.EnablePartitionEof = true;
        using var consumer = KafkaClients.BuildConsumer<string, byte[]>(config, log);
        // The true end of each partition (a read-committed query would answer the first open transaction's offset, and a
        // committed message of ours may lie past another source partition's open transaction).
        var query = KafkaClients.Consumer(bootstrapServers, config.GroupId);
        query.IsolationLevel = IsolationLevel.ReadUncommitted;
        var ends = new Dictionary<int, long>();
        using (var ask = KafkaClients.BuildConsumer<Ignore, Ignore>(query, log))
            for (var p = 0; p < partitions; p++)
            {
                var w = ask.QueryWatermarkOffsets(new TopicPartition(topic, p), TimeSpan.FromSeconds(30));
                if (w.High.Value > w.Low.Value) ends[p] = w.High.Value;
            }
        consumer.Assign(ends.Keys.Select(p => new TopicPartitionOffset(topic, p, Offset.Beginning)));
        var mine = sourcePartition.ToString();
        while (ends.Count > 0)
        {
            ct.ThrowIfCancellationRequested();
            var m = consumer.Consume(TimeSpan.FromMilliseconds(200));
            // Read committed, the last offsets may be transaction markers, never delivered: the end is reached when the fetch position
            // (which steps over them) gets there. Before, an open transaction of another source partition's publisher may hold
            // the readable end back (ours were all fenced, decided, before this): what follows it is read once it ends.
            if (m is { IsPartitionEOF: true })
            {
                if (ends.TryGetValue(m.Partition.Value, out var end) && m.Offset.Value >= end) ends.Remove(m.Partition.Value);
            }
            else if (m is not null && m.Message.Key is { } id && Engine.StateEntry.IsStateId(id))
            {
                var e = ChangeEventJson.Parse(m.Message.Value);
                var d = e.Document!.Value;
                if (d.TryGetProperty("partition", out var from) && from.GetInt32().ToString() == mine)
                    latest[id] = d.GetProperty("values").GetArrayLength() == 0 ? null : (d.GetProperty("key").GetString()!, e.Id);
            }
            // Done with a partition once read to the end it had when asked (by position: compaction may have removed that offset).
            foreach (var (p, end) in ends.ToList())
                if (consumer.Position(new TopicPartition(topic, p)).Value >= end) ends.Remove(p);
        }
        var keysOf = new Dictionary<string, HashSet<string>>(StringComparer.Ordinal);
        foreach (var pair in latest.Values)
            if (pair is var (key, source))
            {
                if (!keysOf.TryGetValue(source, out var keys)) keysOf[source] = keys = new HashSet<string>(StringComparer.Ordinal);
                keys.Add(key);
            }
        return keysOf;
    }, ct);

    /// <summary>A message of the topic: a mapped change, or (<paramref name="watermarks"/> updated) a watermark.</summary>
    public static MappedChange? Parse(ChangeEvent e, Dictionary<string, long> watermarks)
    {
        var d = e.Document ?? throw new FormatException($"mapped message {e.Id} has no document");
        if (e.Collection == Watermark)
        {
            var partition = d.GetProperty("partition").GetInt32().ToString();
            watermarks[partition] = Math.Max(d.GetProperty("next").GetInt64(), watermarks.GetValueOrDefault(partition));
            if (d.TryGetProperty("loads", out var loads))
                foreach (var followed in loads.EnumerateObject())
                {
                    var key = LoadsWatermark(partition, followed.Name);
                    watermarks[key] = Math.Max(followed.Value.GetInt64(), watermarks.GetValueOrDefault(key));
                }
            return null;
        }
        return new MappedChange(d.GetProperty("key").GetString()!, e.Id, d.GetProperty("values").EnumerateArray().Select(v => v.GetRawText()).ToList());
    }

    /// <summary>What <paramref name="change"/>'s document contributes to its key, published by the map stage of <paramref name="sourcePartition"/>.</summary>
    internal static byte[] ChangeMessage(MappedChange change, long etag, DateTimeOffset at, int sourcePartition) => Event(change.Source, Mapped, etag, at, w =>
    {
        w.WriteString("key", change.Key);
        w.WritePropertyName("values");
        w.WriteRawValue(change.ValuesJson, skipInputValidation: true);
        w.WriteNumber("partition", sourcePartition);
    });

    /// <summary>
    /// How far the map stage of <paramref name="sourcePartition"/> has published: its next offset, and for maps that <c>load()</c>
    /// how far it has followed each partition's changes (<paramref name="loads"/>: partition → next offset).
    /// </summary>
    internal static byte[] WatermarkMessage(int sourcePartition, long next, long etag, DateTimeOffset at, IReadOnlyDictionary<string, long>? loads = null) =>
        Event($"{Watermark}/{sourcePartition}", Watermark, etag, at, w =>
        {
            w.WriteNumber("partition", sourcePartition);
            w.WriteNumber("next", next);
            if (loads is not { Count: > 0 }) return;
            w.WriteStartObject("loads");
            foreach (var (partition, offset) in loads) w.WriteNumber(partition, offset);
            w.WriteEndObject();
        });

    /// <summary>
    /// The reducers' watermark key for how far the map stage of <paramref name="mapPartition"/> has followed the changes of
    /// <paramref name="changedPartition"/> (maps that load): <c>2/loads/3</c>.
    /// </summary>
    public static string LoadsWatermark(string mapPartition, string changedPartition) => $"{mapPartition}/{Maps.LoadFollowingFeed.Prefix}{changedPartition}";

    private static byte[] Event(string id, string collection, long etag, DateTimeOffset at, Action<Utf8JsonWriter> body)
    {
        var document = new ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(document))
        {
            w.WriteStartObject();
            body(w);
            w.WriteEndObject();
        }
        var output = new ArrayBufferWriter<byte>();
        ChangeEventJson.Write(output, id, collection, etag, ChangeOp.Put, at, document.WrittenSpan);
        return output.WrittenSpan.ToArray();
    }

    public void Dispose()
    {
        if (_progress.IsValueCreated) _progress.Value.Dispose();
    }
}
