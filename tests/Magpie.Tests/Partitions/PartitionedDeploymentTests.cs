using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Documents;
using Magpie.Kafka;
using Magpie.Kafka.Documents;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;

namespace Magpie.Tests.Partitions;

/// <summary>
/// A split deployment over a partitioned store, on the Stack Exchange sample: writes through any ingest node, input-topic
/// messages on their documents' partitions, indexes and queries equal to the store, a patch-by-query across a rebalance,
/// paging every partition, and bulk requests across partitions.
/// </summary>
public sealed class PartitionedDeploymentTests
{
    private static readonly StackExchangeXml Xml = new(RepoPaths.StackExchangeSample);

    [Fact]
    public async Task A_split_deployment_over_two_ingest_nodes_indexes_queries_and_patches_through_a_rebalance()
    {
        await using var broker = await KafkaBroker.StartOwnedAsync();
        var servers = broker.BootstrapServers;
        var cluster = await IngestCluster.StartAsync(servers, 2);
        await using var _ = cluster;
        await cluster.AllPartitionsServedAsync(TimeSpan.FromSeconds(60));
        var (ingest0, ingest1) = (cluster.Nodes[0], cluster.Nodes[1]);
        await using var query = await MagpieProcess.StartAsync(servers, target: "indexer,query",
            environment: new() { ["MAGPIE__INGESTURL"] = ingest1.BaseUrl.ToString() });

        // Every post through one node's /bulk_docs: batches span partitions, each part applied by its owner.
        var (exit, produced) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", ingest0.BaseUrl.ToString());
        Assert.True(exit == 0, produced);
        var posts = Xml.Posts.Count;

        // Input-topic messages: one keyed as the partitioner places it is applied by its owner; one on another partition is dead-lettered.
        using (var producer = new ProducerBuilder<string, string>(KafkaClients.Producer(servers, "partitioned-test")).Build())
        {
            await producer.ProduceAsync(Topics.Documents, new Message<string, string> { Key = "notes/1", Value = """{"Text":"from the topic"}""" });
            var wrong = (DocumentPartitioner.PartitionOf("notes/2", 6) + 1) % 6;
            await producer.ProduceAsync(new TopicPartition(Topics.Documents, wrong), new Message<string, string> { Key = "notes/2", Value = """{"Text":"misplaced"}""" });
        }
        await WaitAsync(async () => (await ingest1.Http.GetAsync("docs/notes/1")).StatusCode == HttpStatusCode.OK, "the topic's message readable through the other node");
        await WaitAsync(async () => await DeadLetteredAsync(cluster) == 1, "the misplaced message dead-lettered");
        Assert.Equal(HttpStatusCode.NotFound, (await ingest0.Http.GetAsync("docs/notes/2")).StatusCode);

        // The store, summed over both owners, and the index the query process answers from agree with the sample.
        var stats = await ingest1.StatsAsync();
        Assert.Equal(posts, stats.GetProperty("collections").EnumerateObject().Single(c => c.NameEquals("posts") || c.Name.Equals("Posts", StringComparison.OrdinalIgnoreCase)).Value.GetInt64());
        var all = await SplitDeployment.NonStaleAsync(query, "from Posts");
        Assert.Equal(posts, all.GetProperty("totalResults").GetInt32());

        // Paging the collection through one node visits every partition, wherever it is held.
        var paged = new HashSet<string>();
        string? cursor = null;
        do
        {
            var page = await ingest1.Http.GetFromJsonAsync<JsonElement>("docs?collection=Posts&pageSize=500" + (cursor is null ? "" : "&cursor=" + cursor));
            foreach (var doc in page.GetProperty("results").EnumerateArray()) paged.Add(doc.GetProperty("@metadata").GetProperty("@id").GetString()!);
            cursor = page.GetProperty("nextCursor").GetString();
        }
        while (cursor is not null);
        Assert.Equal(posts, paged.Count);

        // A patch-by-query while a third node joins: partitions move under its writes, and every post is patched once.
        // (The loop makes each post take a few milliseconds, so the operation is still writing when the partitions move.)
        var started = await query.Http.PostAsJsonAsync("operations/queries",
            new { query = "from Posts update { let s = 0; for (let i = 0; i < 100000; i++) s += i; this.Bumps = (this.Bumps || 0) + 1; }" });
        Assert.True(started.StatusCode == HttpStatusCode.Accepted, await started.Content.ReadAsStringAsync());
        var operation = (await started.JsonAsync()).GetProperty("operationId").GetString()!;
        await using var joined = await MagpieProcess.StartAsync(servers, target: "ingest",
            environment: new() { ["MAGPIE__PARTITIONEDSTORE"] = "true", ["MAGPIE__CONSUMERGROUP"] = cluster.Group });
        await WaitAsync(async () => (await cluster.OwnersAsync(joined)).ContainsValue(joined.BaseUrl.ToString()), "the joined node holding partitions");
        var during = await query.Http.GetFromJsonAsync<JsonElement>($"operations/{operation}");
        Assert.True(during.GetProperty("state").GetString() == "running", $"the operation ended before the rebalance: {during}");
        JsonElement status = default;
        await WaitAsync(async () => (status = await query.Http.GetFromJsonAsync<JsonElement>($"operations/{operation}")).GetProperty("state").GetString() != "running",
            "the patch-by-query ended", TimeSpan.FromMinutes(3));
        Assert.True(status.GetProperty("state").GetString() == "completed", status.ToString());
        var bumped = await SplitDeployment.NonStaleAsync(query, "from Posts where Bumps = 1");
        Assert.Equal(posts, bumped.GetProperty("totalResults").GetInt32());
        Assert.Equal(0, (await SplitDeployment.NonStaleAsync(query, "from Posts where Bumps != 1")).GetProperty("totalResults").GetInt32());

        // A bulk request across partitions: each partition's part stands alone, and the answer says what became of every command.
        var (a, b) = TwoIdsInDifferentPartitions("bulk/");
        var bEtag = (await ingest0.Http.PutAsync(b, "{}")).EtagHeader();
        var c = Enumerable.Range(0, 1000).Select(i => $"bulk/c{i}").First(id => DocumentPartitioner.PartitionOf(id, 6) == DocumentPartitioner.PartitionOf(b, 6) && id != b);
        var bulk = await ingest1.Http.BulkAsync($$$"""
            [{"method":"PUT","id":"{{{a}}}","document":{"v":1}},{"method":"PUT","id":"{{{b}}}","etag":{{{bEtag + 100}}},"document":{"v":2}},{"method":"PUT","id":"{{{c}}}","document":{"v":3}}]
            """);
        Assert.Equal(HttpStatusCode.MultiStatus, bulk.StatusCode);
        var results = (await bulk.JsonAsync()).GetProperty("results").EnumerateArray().ToList();
        Assert.True(results[0].GetProperty("etag").GetInt64() > 0);
        Assert.Equal(409, results[1].GetProperty("status").GetInt32());
        Assert.Equal(424, results[2].GetProperty("status").GetInt32());
        Assert.Equal(HttpStatusCode.OK, (await ingest0.Http.GetAsync($"docs/{a}")).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await ingest0.Http.GetAsync($"docs/{c}")).StatusCode);

        // A queue sink's messages through any node (the client the sinks process uses): each applied by its documents' owner,
        // once per ledger; one whose writes span partitions set aside with the reason.
        var sink = new Magpie.Http.IngestClient(ingest1.BaseUrl.ToString(), ingest1.Http);
        MessageWrites Message(string id, params string[] docs) => new(id, [.. docs.Select(d => new MessageWrite(MessageWriteMethod.Put, d, """{"from":"queue"}"""))]);
        var (x, y) = TwoIdsInDifferentPartitions("queued/");
        var first = await sink.WriteAsync("orders-sink", [Message("m1", x), Message("m2", x, y), Message("m3", y)]);
        Assert.Equal([MessageWriteResult.Applied, MessageWriteResult.Refused, MessageWriteResult.Applied], first.Select(o => o.Result));
        Assert.Contains("partitions", first[1].Reason);
        var again = await new Magpie.Http.IngestClient(ingest0.BaseUrl.ToString(), ingest0.Http).WriteAsync("orders-sink", [Message("m1", x), Message("m3", y)]);
        Assert.All(again, o => Assert.Equal(MessageWriteResult.AlreadyApplied, o.Result));
        Assert.Equal("queue", (await (await ingest0.Http.GetAsync($"docs/{y}")).JsonAsync()).GetProperty("from").GetString());
    }

    private static (string, string) TwoIdsInDifferentPartitions(string prefix)
    {
        var first = prefix + "a";
        var second = Enumerable.Range(0, 1000).Select(i => $"{prefix}b{i}").First(id => DocumentPartitioner.PartitionOf(id, 6) != DocumentPartitioner.PartitionOf(first, 6));
        return (first, second);
    }

    private static async Task<long> DeadLetteredAsync(IngestCluster cluster)
    {
        long total = 0;
        foreach (var node in cluster.Nodes)
            total += (await node.Http.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("input").GetProperty("deadLettered").GetInt64();
        return total;
    }

    private static async Task WaitAsync(Func<Task<bool>> condition, string what, TimeSpan? within = null)
    {
        var deadline = DateTime.UtcNow + (within ?? TimeSpan.FromSeconds(60));
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < deadline, $"not within {(within ?? TimeSpan.FromSeconds(60)).TotalSeconds:N0} s: {what}");
            await Task.Delay(200);
        }
    }
}
