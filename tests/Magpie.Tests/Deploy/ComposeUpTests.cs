using System.Diagnostics;
using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Text.Json;
using System.Text.RegularExpressions;
using System.Xml.Linq;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Kafka;
using Magpie.Tests.Docs;
using Magpie.Tests.Etl;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Microsoft.Extensions.Logging.Abstractions;
using Npgsql;
using Xunit.Abstractions;

namespace Magpie.Tests.Deploy;

/// <summary>
/// `docker compose up` for real: compose.yaml and the Dockerfile run by docker-compose on podman (the stand-in images of
/// deploy/local-images.sh; grafana left out, see <see cref="ComposeStack"/>), then the used-by path through the published
/// ports only: the seed's indexes and the produce service's posts, the compose page's commands (documents produced to
/// magpie.documents on the host port, a query with the admin key read from the keys volume, SQL), the dashboards' SQL with
/// the grafana key, an ETL task delivering to the RabbitMQ container, /metrics linted and scraped by the Prometheus
/// container; then `restart indexer` and `down` + `up` keep the data.
/// </summary>
public sealed class ComposeUpTests(ITestOutputHelper output)
{
    private const string Project = "magpietest";
    private const int SeedPosts = 5_000;

    [Fact]
    public async Task Compose_up_runs_the_stack_and_serves_the_used_by_path_through_its_ports_and_keeps_data_across_restart_and_down_up()
    {
        var clock = Stopwatch.StartNew();
        var images = await ContainerEngine.ImagesAsync(TimeSpan.FromMinutes(15));
        output.WriteLine($"{images}\nstand-in images ready after {clock.Elapsed.TotalSeconds:F0} s");
        await using var engine = await ContainerEngine.StartAsync();
        await using var stack = ComposeStack.Create(engine, Project);
        // compose.yaml's produce service with fewer posts (its variable; 100,000 by default): the same path, less CI time.
        stack.Variables["MAGPIE_SEED_POSTS"] = SeedPosts.ToString();
        var step = Stopwatch.StartNew();
        // Every Magpie service is one image (magpie:dev, `build: .`): built once, here through the first of them. A plain
        // `build` makes the same image once per service, each a full pass over the context even when every layer is cached.
        await stack.RunAsync(TimeSpan.FromMinutes(15), "build", "keys");
        output.WriteLine($"docker-compose build (the Dockerfile): {step.Elapsed.TotalSeconds:F0} s");

        step.Restart();
        await stack.RunAsync(TimeSpan.FromMinutes(10), "up", "-d");
        // produce is a one-shot too: with two ingest replicas it can finish its posts before the last service is healthy.
        await stack.WaitHealthyAsync(TimeSpan.FromMinutes(5), "keys", "seed", "produce");
        output.WriteLine($"up -d to all healthy: {step.Elapsed.TotalSeconds:F0} s");

        var admin = (await stack.RunAsync(TimeSpan.FromSeconds(30), "exec", "-T", "ingest", "cat", "/keys/admin.key")).Trim();
        var grafana = (await stack.RunAsync(TimeSpan.FromSeconds(30), "exec", "-T", "ingest", "cat", "/keys/grafana.key")).Trim();
        HttpClient Client(int port) => new() { BaseAddress = new Uri($"http://127.0.0.1:{port}/"), Timeout = TimeSpan.FromSeconds(60), DefaultRequestHeaders = { Authorization = new AuthenticationHeaderValue("Bearer", admin) } };
        // Two ingest replicas of a partitioned store: either takes any request.
        var ingestPorts = new[] { await stack.PortAsync("ingest", 8080, 1), await stack.PortAsync("ingest", 8080, 2) };
        using var ingest = Client(ingestPorts[0]);
        var replicas = ingestPorts.Select(Client).ToList();
        using var query = Client(8082);
        using var sinks = Client(8083);
        var indexerPorts = new[] { await stack.PortAsync("indexer", 8080, 1), await stack.PortAsync("indexer", 8080, 2) };

        // Without a key the services refuse (they listen beyond loopback).
        using (var anonymous = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{indexerPorts[0]}/") })
            Assert.Equal(HttpStatusCode.Unauthorized, (await anonymous.GetAsync("indexes")).StatusCode);
        // The seed defined deploy/indexes on an indexer; they travelled to the other through magpie.indexes.
        foreach (var port in indexerPorts)
        {
            using var indexer = Client(port);
            var defined = await indexer.GetFromJsonAsync<JsonElement>("indexes");
            Assert.Equal(DeployedIndexesFixture.IndexNames(), defined.EnumerateArray().Select(i => i.GetProperty("name").GetString()!).Order());
        }

        // ETL as compose.yaml's comment on the sinks service says: a connection to the rabbitmq service, a task for the posts.
        const string exchange = "compose-etl";
        await using var queue = await QueueReader.StartAsync("amqp://guest:guest@127.0.0.1:5672/", "compose-etl-q", exchange);
        await sinks.PutConnectionAsync("rabbit", new { type = "rabbitmq", url = "amqp://guest:guest@rabbitmq:5672/" });
        await sinks.PutTaskAsync("users", new
        {
            connection = "rabbit",
            transforms = new[] { new { collections = new[] { "Users" }, script = $"loadTo('{exchange}', {{ Id: id(this), Name: this.DisplayName }});" } },
        });

        // The compose page's commands after `docker compose up`: its key, the Stack Exchange sample on the host's Kafka port, a query, SQL.
        step.Restart();
        var page = ReadmeExamples.Blocks(File.ReadAllText(Path.Combine(RepoPaths.Root, "docs", "KAFKA-AND-COMPOSE.md")), "docker compose up");
        Assert.Equal(["docker compose up --build        # first build of the image takes a few minutes"], page[0]);
        await using (var shell = await DocsShell.CreateAsync(swaps: new() { ["docker compose exec ingest"] = $"{stack.CommandLine} exec -T ingest" }))
            await shell.RunAsync(page.Skip(1));
        output.WriteLine($"the compose page's commands: {step.Elapsed.TotalSeconds:F0} s");

        // One post the TagCounts map and the ETL script fail on (Tags is a number), one message without a key (→ the DLQ).
        Assert.Equal(HttpStatusCode.Created, (await ingest.PutAsync("posts/bad-tags", """{"Tags": 5, "Score": 1, "PostTypeId": 1}""")).StatusCode);
        using (var producer = KafkaClients.BuildProducer<byte[]?, byte[]>(KafkaClients.Producer("127.0.0.1:9094", "compose-test")))
            await producer.ProduceAsync(Topics.Documents, new Message<byte[]?, byte[]> { Key = null, Value = "{}"u8.ToArray() });

        // produce's posts and the sample's are in: what the store holds, the query service counts, over HTTP and SQL.
        await stack.WaitHealthyAsync(TimeSpan.FromMinutes(5), "keys", "seed", "produce");
        var posts = await StoredPostsAsync(replicas, sinceStart: true);
        Assert.True(posts > SeedPosts, $"{posts} posts stored");
        long deadLettered = 0;
        foreach (var replica in replicas) deadLettered += (await replica.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("input").GetProperty("deadLettered").GetInt64();
        Assert.Equal(1, deadLettered);
        Assert.Equal(posts, await IndexedAsync(query, "from index 'PostActivity'"));
        await IndexedAsync(query, "from index 'TagCounts'");
        var pg = $"Host=127.0.0.1;Port=5433;Username=grafana;Password={grafana};Database=magpie;Pooling=false;Server Compatibility Mode=NoTypeLoading";
        await using (var db = new NpgsqlConnection(pg))
        {
            await db.OpenAsync();
            Assert.Equal(posts, (long)(await new NpgsqlCommand("""SELECT count(*) FROM "PostActivity" """, db).ExecuteScalarAsync())!);
            await using var write = new NpgsqlCommand("""DELETE FROM "PostActivity" """, db);
            Assert.Equal("25006", (await Assert.ThrowsAsync<PostgresException>(() => write.ExecuteNonQueryAsync())).SqlState);   // the grafana key reads only
        }
        // Every panel of the data dashboard runs through the published port with the grafana key (DashboardSqlTests checks its answers).
        foreach (var sql in DashboardSqlTests.PanelSql())
        {
            await using var db = new NpgsqlConnection(pg);
            await db.OpenAsync();
            await using var reader = await new NpgsqlCommand(sql, db).ExecuteReaderAsync();
            while (await reader.ReadAsync()) { }
        }

        // ETL: every user of the sample (its Users.xml; their badges change them again) reached the queue.
        var users = XDocument.Load(Path.Combine(RepoPaths.StackExchangeSample, "Users.xml")).Root!.Elements("row")
            .Select(r => $"users/{r.Attribute("Id")!.Value}").ToHashSet();
        static string UserOf(ReceivedMessage m) => JsonDocument.Parse(m.Body).RootElement.GetProperty("Id").GetString()!;
        var received = await queue.WaitForAsync(r => r.Select(UserOf).Distinct().Count() >= users.Count, TimeSpan.FromSeconds(120));
        Assert.True(users.SetEquals(received.Select(UserOf)), $"{received.Select(UserOf).Distinct().Count()} users delivered of {users.Count}");
        await sinks.WaitForStatsAsync("users", s => s.GetProperty("scriptErrors").GetInt64() == 0, TimeSpan.FromSeconds(30));

        // /metrics of every service, linted; every metric the pipeline dashboard charts is exported by some service.
        var samples = new HashSet<string>();
        foreach (var port in indexerPorts.Concat(ingestPorts).Concat([8082, 8083]))
        {
            using var service = Client(port);
            var metrics = await service.GetStringAsync("metrics");
            var lint = await Prometheus.PromtoolAsync(metrics, "check", "metrics");
            Assert.True(lint.Exit == 0, $":{port}: promtool check metrics\n{lint.Output}");
            samples.UnionWith(metrics.Split('\n').Where(l => l.Length > 0 && l[0] != '#').Select(l => l[..l.IndexOfAny(['{', ' '])]));
        }
        Assert.Empty(PipelineDashboardMetrics().Except(samples));
        // The Prometheus container scrapes all six (both indexers and both ingest replicas found by DNS) and sees every write.
        using var prometheus = new HttpClient { BaseAddress = new Uri("http://127.0.0.1:9090/") };
        var deadline = DateTime.UtcNow.AddSeconds(60);
        List<(Dictionary<string, string> Labels, double Value)> up, written;
        do
        {
            await Task.Delay(1000);
            up = await Prometheus.QueryAsync(prometheus, "up == 1");
            written = await Prometheus.QueryAsync(prometheus, "sum(magpie_documents_written_total)");
        } while ((up.Count < 6 || written.Count == 0 || written[0].Value < posts) && DateTime.UtcNow < deadline);
        Assert.Equal(["magpie-indexer", "magpie-indexer", "magpie-ingest", "magpie-ingest", "magpie-query", "magpie-sinks"], up.Select(u => u.Labels["job"]).Order());
        Assert.True(written.Single().Value >= posts, $"prometheus saw {written.Single().Value} writes of {posts} posts");

        // `restart indexer`: the replicas come back healthy on their shards and answer the same.
        step.Restart();
        await stack.RunAsync(TimeSpan.FromMinutes(3), "restart", "indexer");
        await stack.WaitHealthyAsync(TimeSpan.FromMinutes(5), "keys", "seed", "produce");
        Assert.Equal(posts, await IndexedAsync(query, "from index 'PostActivity'"));
        output.WriteLine($"restart indexer to answering again: {step.Elapsed.TotalSeconds:F0} s");

        // `down` then `up`: the volumes keep the keys and Kafka's log; the ingest replicas and the indexers (no volume) rebuild
        // the store's partitions and the shards from magpie.changes. produce is left out of this `up`: publishing its posts
        // again would hide a loss.
        step.Restart();
        await stack.RunAsync(TimeSpan.FromMinutes(3), "down");
        await stack.RunAsync(TimeSpan.FromMinutes(10), ["up", "-d", .. (await stack.ServicesAsync()).Where(s => s != "produce")]);
        await stack.WaitHealthyAsync(TimeSpan.FromMinutes(5), "keys", "seed");
        Assert.Equal(admin, (await stack.RunAsync(TimeSpan.FromSeconds(30), "exec", "-T", "ingest", "cat", "/keys/admin.key")).Trim());
        var after = new[] { await stack.PortAsync("ingest", 8080, 1), await stack.PortAsync("ingest", 8080, 2) }.Select(Client).ToList();
        Assert.Equal(posts, await StoredPostsAsync(after, sinceStart: false));
        Assert.Equal(posts, await IndexedAsync(query, "from index 'PostActivity'"));
        output.WriteLine($"down + up to answering again: {step.Elapsed.TotalSeconds:F0} s; the whole test {clock.Elapsed.TotalSeconds:F0} s");
    }

    /// <summary>
    /// The Posts the store holds, once the ingest replicas have taken every message on magpie.documents (the topic's end
    /// offsets, read on the host's Kafka port, against what their input consumers applied or dead-lettered since they started),
    /// every partition is served and every partition's relay has published its writes.
    /// </summary>
    private static async Task<long> StoredPostsAsync(IReadOnlyList<HttpClient> replicas, bool sinceStart)
    {
        long messages = 0;
        if (sinceStart)
        {
            using var admin = new AdminClientBuilder(KafkaClients.Admin("127.0.0.1:9094")).Build();
            using var consumer = KafkaClients.BuildConsumer<byte[], byte[]>(KafkaClients.Consumer("127.0.0.1:9094", $"compose-test-{Guid.NewGuid():N}"), NullLogger.Instance);
            messages = admin.GetMetadata(Topics.Documents, TimeSpan.FromSeconds(10)).Topics[0].Partitions
                .Sum(p => consumer.QueryWatermarkOffsets(new TopicPartition(Topics.Documents, p.PartitionId), TimeSpan.FromSeconds(10)).High.Value);
        }
        var deadline = DateTime.UtcNow.AddMinutes(3);
        while (true)
        {
            long taken = 0, lag = 0;
            var pipelines = new List<JsonElement>();
            foreach (var replica in replicas)
            {
                var pipeline = await replica.GetFromJsonAsync<JsonElement>("stats/pipeline");
                pipelines.Add(pipeline);
                var input = pipeline.GetProperty("input");
                taken += input.GetProperty("applied").GetInt64() + input.GetProperty("deadLettered").GetInt64();
                lag += pipeline.GetProperty("partitions").EnumerateArray().Sum(p => p.GetProperty("relay").GetProperty("lagEtags").GetInt64());
            }
            var stats = await replicas[0].GetFromJsonAsync<JsonElement>("stats");
            if (taken >= messages && lag == 0 && stats.GetProperty("missing").GetArrayLength() == 0)
                return stats.GetProperty("collections").EnumerateObject()
                    .Single(c => c.Name.Equals("Posts", StringComparison.OrdinalIgnoreCase)).Value.GetInt64();   // names as first written
            Assert.True(DateTime.UtcNow < deadline, $"ingest did not take the {messages} messages on magpie.documents in 3 minutes: {string.Join("\n", pipelines)}");
            await Task.Delay(250);
        }
    }

    /// <summary>An index's total, asked non-stale (503 while an indexer takes its partitions back after a restart).</summary>
    private static async Task<long> IndexedAsync(HttpClient query, string rql)
    {
        var deadline = DateTime.UtcNow.AddMinutes(5);
        while (true)
        {
            var r = await query.PostAsJsonAsync("queries", new { query = rql, pageSize = 0, waitForNonStaleResults = true, timeoutMs = 30_000 });
            if (r.StatusCode is not (HttpStatusCode.ServiceUnavailable or HttpStatusCode.RequestTimeout))
            {
                Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
                var body = await r.JsonAsync();
                if (!body.GetProperty("isStale").GetBoolean()) return body.GetProperty("totalResults").GetInt64();
            }
            Assert.True(DateTime.UtcNow < deadline, $"still stale after 5 minutes: {rql}");
            await Task.Delay(500);
        }
    }

    /// <summary>Metric names in the pipeline dashboard's PromQL.</summary>
    private static HashSet<string> PipelineDashboardMetrics()
    {
        using var dashboard = JsonDocument.Parse(File.ReadAllText(DashboardSqlTests.DashboardPath("magpie-pipeline.json")));
        var names = dashboard.RootElement.GetProperty("panels").EnumerateArray()
            .SelectMany(p => p.GetProperty("targets").EnumerateArray())
            .SelectMany(t => Regex.Matches(t.GetProperty("expr").GetString()!, @"\b(?:magpie|http_server)_[a-z_]+").Select(m => m.Value))
            .ToHashSet();
        Assert.NotEmpty(names);
        return names;
    }
}
