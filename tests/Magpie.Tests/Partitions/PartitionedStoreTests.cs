using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Xunit.Abstractions;

namespace Magpie.Tests.Partitions;

/// <summary>
/// A partitioned store on a real broker: three ingest processes in one group, each holding some partitions; writers on every
/// node; one node killed with SIGKILL mid-load. Every acknowledged write must survive, readable through every node.
/// </summary>
public sealed class PartitionedStoreTests(ITestOutputHelper output)
{
    private const int Partitions = 6;

    [Fact]
    public async Task Three_ingest_nodes_survive_a_kill_9_with_nothing_acknowledged_lost()
    {
        // A broker of its own: a partition's store is rebuilt from the whole of its magpie.changes partition.
        await using var broker = await KafkaBroker.StartOwnedAsync();
        var cluster = await IngestCluster.StartAsync(broker.BootstrapServers, 3);
        await using var _ = cluster;
        await cluster.AllPartitionsServedAsync(TimeSpan.FromSeconds(60));
        await using var query = await MagpieProcess.StartAsync(broker.BootstrapServers, target: "indexer,query",
            environment: new() { ["MAGPIE__INGESTURL"] = cluster.Nodes[0].BaseUrl.ToString() });

        var acknowledged = new ConcurrentDictionary<string, Acknowledged>();
        using var stop = new CancellationTokenSource();
        var writers = Enumerable.Range(0, 3).Select(w => Task.Run(() => WriteAsync(cluster, w, acknowledged, stop.Token))).ToList();
        // Mid-load: writes acknowledged on every node before the kill (a count, not a time: a busy machine acknowledges slower).
        var loaded = DateTime.UtcNow.AddSeconds(120);
        while (acknowledged.Count < 150 || DateTime.UtcNow < loaded.AddSeconds(-116))
        {
            Assert.True(DateTime.UtcNow < loaded, $"only {acknowledged.Count} writes acknowledged in 120 s before the kill");
            await Task.Delay(100);
        }

        var victim = cluster.Nodes[2];
        var before = await cluster.OwnersAsync(cluster.Nodes[0]);
        var victimPartitions = before.Where(o => o.Value == victim.BaseUrl.ToString()).Select(o => o.Key).ToList();
        Assert.NotEmpty(victimPartitions);
        var killedAt = Stopwatch.StartNew();
        victim.Crash();
        // Its partitions are served by the survivors: a write to each answers again.
        var survivors = cluster.Nodes.Take(2).ToList();
        await cluster.AllPartitionsServedAsync(TimeSpan.FromSeconds(60), survivors);
        var takeover = killedAt.Elapsed;
        output.WriteLine($"partitions [{string.Join(", ", victimPartitions)}] of the killed node served again after {takeover.TotalSeconds:N1} s");
        foreach (var line in survivors.SelectMany(n => n.Output).Where(l => l.Contains("rebuilt from"))) output.WriteLine(line);
        await Task.Delay(TimeSpan.FromSeconds(3));
        stop.Cancel();
        await Task.WhenAll(writers);

        output.WriteLine($"{acknowledged.Count} writes acknowledged, durability: {string.Join(", ", acknowledged.Values.GroupBy(a => a.Durability).Select(g => $"{g.Key} {g.Count()}"))}");
        Assert.True(acknowledged.Count > 100, $"only {acknowledged.Count} writes were acknowledged");
        Assert.True(takeover < TimeSpan.FromSeconds(10), $"the killed node's partitions took {takeover.TotalSeconds:N1} s to be served again");
        foreach (var node in survivors) await AssertEveryWriteReadableAsync(node, acknowledged.Values);
        AssertEtagsIncreasePerPartition(acknowledged.Values);
        // The index, fed by the relays of every owner before and after the takeover, holds exactly what the store holds.
        var indexed = await SplitDeployment.NonStaleAsync(query, "from load");
        Assert.Equal(acknowledged.Count, indexed.GetProperty("totalResults").GetInt32());

        // The killed node comes back on its data directory and takes partitions back; every document reads through it too.
        await victim.StartAsync();
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (!(await cluster.OwnersAsync(cluster.Nodes[0])).ContainsValue(victim.BaseUrl.ToString()))
        {
            Assert.True(DateTime.UtcNow < deadline, "the restarted node was given no partition in 60 s");
            await Task.Delay(250);
        }
        await cluster.AllPartitionsServedAsync(TimeSpan.FromSeconds(60));
        foreach (var node in cluster.Nodes) await AssertEveryWriteReadableAsync(node, acknowledged.Values);
        var stats = await victim.StatsAsync();
        Assert.Equal(acknowledged.Count, stats.GetProperty("collections").GetProperty("load").GetInt64());
    }

    /// <summary>One writer: PUTs new documents through its node (another one once its node is gone) and keeps every acknowledgement.</summary>
    private static async Task WriteAsync(IngestCluster cluster, int writer, ConcurrentDictionary<string, Acknowledged> acknowledged, CancellationToken stop)
    {
        var node = writer;
        for (var i = 0; !stop.IsCancellationRequested; i++)
        {
            var id = $"load/{writer}-{i}";
            var body = $$"""{"writer":{{writer}},"i":{{i}},"text":"written by {{writer}}"}""";
            while (!stop.IsCancellationRequested)
            {
                var http = cluster.Nodes[node].Http;
                try
                {
                    using var response = await http.PutAsync($"docs/{id}", HttpJson.Json(body), CancellationToken.None);
                    if (response.IsSuccessStatusCode)
                    {
                        var durability = response.Headers.TryGetValues("Magpie-Durability", out var d) ? d.Single() : null;
                        acknowledged[id] = new Acknowledged(id, body, response.EtagHeader(), writer, i, durability);
                        break;
                    }
                    // 503 while the partition moves: not acknowledged, asked again.
                    Assert.True(response.StatusCode == HttpStatusCode.ServiceUnavailable, $"PUT {id} through {cluster.Nodes[node].BaseUrl}: {(int)response.StatusCode} {await response.Content.ReadAsStringAsync()}");
                }
                catch (HttpRequestException) { node = (node + 1) % 2; }   // the node is gone: go on through a survivor
                catch (TaskCanceledException) { node = (node + 1) % 2; }
            }
        }
    }

    private static async Task AssertEveryWriteReadableAsync(MagpieProcess node, IEnumerable<Acknowledged> writes)
    {
        var missing = new List<string>();
        foreach (var chunk in writes.Chunk(32))
            await Task.WhenAll(chunk.Select(async w =>
            {
                using var response = await node.Http.GetAsync($"docs/{w.Id}");
                if (response.StatusCode != HttpStatusCode.OK) { lock (missing) missing.Add($"{w.Id}: {(int)response.StatusCode}"); return; }
                var doc = await response.JsonAsync();
                Assert.Equal(w.Writer, doc.GetProperty("writer").GetInt32());
                Assert.Equal(w.Index, doc.GetProperty("i").GetInt32());
                Assert.Equal(w.Etag, response.EtagHeader());
            }));
        Assert.True(missing.Count == 0, $"{missing.Count} acknowledged writes not readable through {node.BaseUrl}: {string.Join(", ", missing.Take(10))}");
    }

    /// <summary>A writer's writes are sequential: within each partition their etags must increase, across the takeover too.</summary>
    private static void AssertEtagsIncreasePerPartition(IEnumerable<Acknowledged> writes)
    {
        foreach (var sequence in writes.GroupBy(w => (w.Writer, Partition: Magpie.Kafka.Documents.DocumentPartitioner.PartitionOf(w.Id, Partitions))))
        {
            var ordered = sequence.OrderBy(w => w.Index).ToList();
            for (var i = 1; i < ordered.Count; i++)
                Assert.True(ordered[i].Etag > ordered[i - 1].Etag,
                    $"partition {sequence.Key.Partition}: {ordered[i].Id} got etag {ordered[i].Etag} after {ordered[i - 1].Id}'s {ordered[i - 1].Etag}");
        }
    }

    private sealed record Acknowledged(string Id, string Body, long Etag, int Writer, int Index, string? Durability);
}

/// <summary>Ingest processes of one partitioned store: one consumer group, each its own data directory and advertised URL.</summary>
public sealed class IngestCluster : IAsyncDisposable
{
    private IngestCluster(IReadOnlyList<MagpieProcess> nodes, string group) => (Nodes, Group) = (nodes, group);

    public IReadOnlyList<MagpieProcess> Nodes { get; }

    /// <summary>The ingest consumer group the nodes share (a node started later joins with it).</summary>
    public string Group { get; }

    public static async Task<IngestCluster> StartAsync(string servers, int nodes, Dictionary<string, string>? environment = null)
    {
        var group = $"magpie-ingest-{Guid.NewGuid():N}";
        var env = new Dictionary<string, string>(environment ?? []) { ["MAGPIE__PARTITIONEDSTORE"] = "true", ["MAGPIE__CONSUMERGROUP"] = group };
        var started = await Task.WhenAll(Enumerable.Range(0, nodes).Select(_ => MagpieProcess.StartAsync(servers, target: "ingest", environment: env)));
        return new IngestCluster(started, group);
    }

    /// <summary>Partition → the advertised URL of the node holding it, as <paramref name="asked"/> sums it up in <c>/stats</c>.</summary>
    public async Task<Dictionary<int, string>> OwnersAsync(MagpieProcess asked)
    {
        var stats = await asked.Http.GetFromJsonAsync<JsonElement>("stats");
        return stats.GetProperty("partitions").EnumerateArray().ToDictionary(p => p.GetProperty("partition").GetInt32(), p => p.GetProperty("owner").GetString()!);
    }

    /// <summary>Waits until every partition has a node serving it, as each of <paramref name="asked"/> sees it.</summary>
    public async Task AllPartitionsServedAsync(TimeSpan within, IReadOnlyList<MagpieProcess>? asked = null)
    {
        var deadline = DateTime.UtcNow + within;
        foreach (var node in asked ?? Nodes)
            while (true)
            {
                try
                {
                    var stats = await node.Http.GetFromJsonAsync<JsonElement>("stats");
                    if (stats.GetProperty("missing").GetArrayLength() == 0) break;
                }
                catch (HttpRequestException) { }
                Assert.True(DateTime.UtcNow < deadline, $"not every partition was served within {within.TotalSeconds:N0} s");
                await Task.Delay(100);
            }
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var node in Nodes) await node.DisposeAsync();
    }
}
