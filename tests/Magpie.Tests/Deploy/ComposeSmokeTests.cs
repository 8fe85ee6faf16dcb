using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Kafka;
using Magpie.Producers.Sources;
using Magpie.Tests.Docs;
using Magpie.Tests.Etl;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Npgsql;
using Xunit.Abstractions;
using YamlDotNet.RepresentationModel;

namespace Magpie.Tests.Deploy;

/// <summary>
/// Keeps compose.yaml honest without a Docker engine: every Magpie service it declares runs as a local process with the
/// command and environment compose gives it (replicas included), its hostnames mapped to a Kafka and a RabbitMQ started
/// here; then the used-by flow: the seed's indexes, the produce service's posts on magpie.documents, queries over HTTP
/// and over the PostgreSQL port with compose's credentials, ETL messages in RabbitMQ, /readyz, and /metrics checked
/// by promtool and scraped by a real Prometheus running deploy/prometheus/prometheus.yml (targets mapped the same way).
/// </summary>
[Collection(KafkaCollection.Name)]
public sealed class ComposeSmokeTests(ITestOutputHelper output)
{
    /// <summary>compose's produce service publishes 100,000 posts; the test publishes this many with the same command.</summary>
    private const int Posts = 3000;

    [Fact]
    public async Task Compose_services_run_as_local_processes_and_serve_publish_query_sql_etl_and_metrics()
    {
        var compose = ComposeFile.Load(Path.Combine(RepoPaths.Root, "compose.yaml"));
        var magpieServices = compose.Services.Values.Where(s => s.Image == "magpie:dev" && s.Command is ["run", ..]).ToList();
        Assert.Equal(["indexer", "ingest", "query", "sinks"], magpieServices.Select(s => s.Name).Order());
        Assert.Equal(2, compose.Services["indexer"].Replicas);

        await using var kafka = await KafkaBroker.StartOwnedAsync();   // empty, as compose's Kafka is on first start
        await using var rabbit = await RabbitMqBroker.StartAsync();
        var keysVolume = Directory.CreateTempSubdirectory("magpie-compose-keys-").FullName;
        string Map(string value) => value.Replace("kafka:9092", kafka.BootstrapServers).Replace("/keys/", keysVolume + "/");

        // keys: the one-shot's magpie commands, run as it runs them, make the deployment's keys first.
        var keysScript = compose.Services["keys"].Command.Single();
        var keyCommands = keysScript.Split("&&").Select(c => c.Trim()).Where(c => c.StartsWith("dotnet /app/magpie.dll ")).ToList();
        Assert.Equal(3, keyCommands.Count);
        foreach (var command in keyCommands)
        {
            var (made, madeOutput) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1),
                command["dotnet /app/magpie.dll ".Length..].Split(' ', StringSplitOptions.RemoveEmptyEntries).Select(Map).ToArray());
            Assert.True(made == 0, madeOutput);
        }
        string Key(string name) => File.ReadAllText(Path.Combine(keysVolume, $"{name}.key")).Trim();
        Assert.Contains("chown 472 /keys/grafana.key", keysScript);

        var processes = new List<(string Service, MagpieProcess Process)>();
        try
        {
            string? ingestUrl = null;
            async Task Start(ComposeFile.Service s)
            {
                var target = s.Command[s.Command.ToList().IndexOf("--target") + 1];
                // The fixture's free ports stand in for compose's port mappings and service names; everything else is compose's environment.
                var environment = s.Environment.Where(e => e.Key != "MAGPIE__PG__PORT")
                    .ToDictionary(e => e.Key, e => ingestUrl is null ? Map(e.Value) : Map(e.Value).Replace("http://ingest:8080", ingestUrl.TrimEnd('/')));
                var process = await MagpieProcess.StartAsync(kafka: null, target: target, environment: environment);
                process.ApiKey = Key("admin");   // the key file has keys: every request but health and metrics carries one
                lock (processes) processes.Add((s.Name, process));
            }
            // Ingest first: the others reach it by its address (compose's http://ingest:8080).
            await Start(magpieServices.Single(s => s.Name == "ingest"));
            ingestUrl = processes.Single().Process.BaseUrl.ToString();
            await Task.WhenAll(magpieServices.Where(s => s.Name != "ingest").SelectMany(s => Enumerable.Range(0, s.Replicas).Select(_ => s)).Select(Start));
            MagpieProcess One(string service) => processes.First(p => p.Service == service).Process;
            var (ingest, indexer, query, sinks) = (One("ingest"), One("indexer"), One("query"), One("sinks"));
            // Kafka mode came from compose's MAGPIE__KAFKA (the processes get no --kafka option).
            Assert.Equal(kafka.BootstrapServers, (await ingest.Http.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("kafka").GetString());

            // seed: the same definitions, PUT where compose's seed PUTs them.
            var seed = compose.Services["seed"];
            Assert.Contains("./deploy/indexes:/indexes:ro", seed.Volumes);
            Assert.Contains("http://indexer:8080/indexes/$(basename $f .json)", seed.Command.Single());
            Assert.Contains("Authorization: Bearer $(cat /keys/admin.key)", seed.Command.Single());
            // Without the key compose's services refuse (they listen beyond loopback).
            using (var anonymous = new HttpClient { BaseAddress = indexer.BaseUrl })
                Assert.Equal(HttpStatusCode.Unauthorized, (await anonymous.GetAsync("indexes")).StatusCode);
            await DeployedIndexesFixture.DefineAsync(indexer.Http);

            // ETL as compose.yaml's comment on the sinks service says, before the posts arrive.
            var exchange = "posts-etl";
            await using var queue = await QueueReader.StartAsync(rabbit.Url, "posts-etl-q", exchange);
            await sinks.Http.PutConnectionAsync("rabbit", new { type = "rabbitmq", url = rabbit.Url });
            await sinks.Http.PutTaskAsync("posts", new
            {
                connection = "rabbit",
                transforms = new[] { new { collections = new[] { "Posts" }, script = $"loadTo('{exchange}', {{ Id: id(this), Score: this.Score, Tags: this.Tags.slice(0) }});" } },
            });

            // produce: compose's command, with fewer posts.
            var produce = compose.Services["produce"].Command.Select(Map).ToArray();
            produce[Array.IndexOf(produce, "--count") + 1] = Posts.ToString();
            var (exit, producedOutput) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(3), produce);
            Assert.True(exit == 0, producedOutput);
            // One post the TagCounts map and the ETL script fail on (Tags is a number), one input message without a key (→ DLQ).
            Assert.Equal(HttpStatusCode.Created, (await ingest.Http.PutAsync("posts/bad-tags", """{"Tags": 5, "Score": 1}""")).StatusCode);
            using (var producer = KafkaClients.BuildProducer<byte[]?, byte[]>(KafkaClients.Producer(kafka.BootstrapServers, "smoke-test")))
                await producer.ProduceAsync(Topics.Documents, new Message<byte[]?, byte[]> { Key = null, Value = "{}"u8.ToArray() });

            // Query over HTTP (query service, fanning out to both indexers) once everything is indexed: the posts and the keyless
            // message taken off magpie.documents, the relay caught up.
            var input = await SplitDeployment.InputConsumedAsync(ingest, Posts + 1);
            Assert.Equal(((long)Posts, 1L), (input.GetProperty("applied").GetInt64(), input.GetProperty("deadLettered").GetInt64()));
            await SplitDeployment.RelayCaughtUpAsync(ingest);
            var all = await SplitDeployment.NonStaleAsync(query, "from index 'PostActivity'");
            Assert.Equal(Posts + 1, all.GetProperty("totalResults").GetInt64());
            await SplitDeployment.NonStaleAsync(query, "from index 'TagCounts'");
            var streamed = await query.Http.PostAsJsonAsync("streams/queries", new { query = "from index 'PostActivity' where PostTypeId = 1" });
            // What the produce command published (its default seed, 42), for the expected figures below.
            var published = SyntheticPosts.Generate(Posts, 42).Select(w => JsonDocument.Parse(w.Body!).RootElement).ToList();
            var questions = published.Count(p => p.GetProperty("PostTypeId").GetInt32() == 1);
            Assert.Equal(questions, (await streamed.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Length);

            // Query over the PostgreSQL port as Grafana's data source does: user grafana, the grafana key file as password.
            Assert.Contains("cat /keys/grafana.key", string.Join(' ', File.ReadAllLines(Path.Combine(RepoPaths.Root, "compose.yaml")).Where(l => l.Contains("MAGPIE_PG_PASSWORD"))));
            Assert.Contains("user: grafana", File.ReadAllText(Path.Combine(RepoPaths.Root, "deploy", "grafana", "provisioning", "datasources", "magpie.yaml")));
            await using (var db = new NpgsqlConnection($"Host=127.0.0.1;Port={query.PgPort};Username=grafana;Password={Key("grafana")};Database=magpie;Pooling=false;Server Compatibility Mode=NoTypeLoading"))
            {
                await db.OpenAsync();
                await using var count = new NpgsqlCommand("""SELECT count(*) FROM "PostActivity" """, db);
                Assert.Equal(Posts + 1L, (long)(await count.ExecuteScalarAsync())!);
                var tags = published.Sum(p => p.GetProperty("Tags").GetArrayLength());
                await using var tagSum = new NpgsqlCommand("""SELECT sum("Posts") FROM "TagCounts" """, db);
                Assert.Equal((double)tags, (double)(await tagSum.ExecuteScalarAsync())!);
            }

            // ETL: one message per good post in the queue; the bad one is a script error in the task's stats.
            var received = await queue.WaitForAsync(r => r.Select(m => m.MessageId).Distinct().Count() >= Posts, TimeSpan.FromSeconds(120));
            Assert.Equal(Posts, received.Select(m => m.MessageId).Distinct().Count());
            await sinks.Http.WaitForStatsAsync("posts", s => s.GetProperty("scriptErrors").GetInt64() == 1, TimeSpan.FromSeconds(30));

            // Health and metrics of every process.
            var samples = new HashSet<string>();
            foreach (var (service, process) in processes)
            {
                var ready = await process.Http.GetAsync("readyz");
                Assert.True(ready.IsSuccessStatusCode, $"{service}: {await ready.Content.ReadAsStringAsync()}");
                var metrics = await process.Http.GetStringAsync("metrics");
                var lint = await PrometheusServer.PromtoolAsync(metrics, "check", "metrics");
                Assert.True(lint.Exit == 0, $"{service}: promtool check metrics\n{lint.Output}");
                samples.UnionWith(metrics.Split('\n').Where(l => l.Length > 0 && l[0] != '#').Select(l => l[..l.IndexOfAny(['{', ' '])]));
            }
            // Every metric the pipeline dashboard charts is exported by some service.
            var charted = PipelineDashboardMetrics();
            Assert.NotEmpty(charted);
            Assert.Empty(charted.Except(samples));

            // A real Prometheus with deploy/prometheus/prometheus.yml, compose hostnames mapped to the processes.
            await using var prometheus = await PrometheusServer.StartAsync(PrometheusConfig(processes));
            var deadline = DateTime.UtcNow.AddSeconds(60);
            List<(Dictionary<string, string> Labels, double Value)> up, written;
            do
            {
                await Task.Delay(1000);
                up = await prometheus.QueryAsync("up == 1");
                written = await prometheus.QueryAsync("sum(magpie_documents_written_total)");
            } while ((up.Count < processes.Count || written.Count == 0) && DateTime.UtcNow < deadline);
            output.WriteLine($"prometheus: up {string.Join(", ", up.Select(u => u.Labels["job"]))}; documents written {written.FirstOrDefault().Value}");
            Assert.Equal(["magpie-indexer", "magpie-indexer", "magpie-ingest", "magpie-query", "magpie-sinks"], up.Select(u => u.Labels["job"]).Order());
            Assert.Equal(Posts + 1, written.Single().Value);

            // The compose page's commands after `docker compose up`, with compose's published ports mapped to the processes.
            var page = ReadmeExamples.Blocks(File.ReadAllText(Path.Combine(RepoPaths.Root, "docs", "KAFKA-AND-COMPOSE.md")), "docker compose up");
            Assert.Equal(["docker compose up --build        # first build of the image takes a few minutes"], page[0]);
            await using var shell = await DocsShell.CreateAsync(swaps: new()
            {
                ["docker compose exec ingest cat /keys/admin.key"] = $"cat {keysVolume}/admin.key",
                ["localhost:9094"] = kafka.BootstrapServers,
                ["localhost:8080"] = $"127.0.0.1:{ingest.Port}",
                ["localhost:8082"] = $"127.0.0.1:{query.Port}",
                ["port=5433"] = $"port={query.PgPort}",
            });
            await shell.RunAsync(page.Skip(1));
        }
        finally
        {
            foreach (var (_, process) in processes) await process.DisposeAsync();
        }
    }

    /// <summary>Metric names in the pipeline dashboard's PromQL.</summary>
    private static HashSet<string> PipelineDashboardMetrics()
    {
        using var dashboard = JsonDocument.Parse(File.ReadAllText(DashboardSqlTests.DashboardPath("magpie-pipeline.json")));
        return dashboard.RootElement.GetProperty("panels").EnumerateArray()
            .SelectMany(p => p.GetProperty("targets").EnumerateArray())
            .SelectMany(t => Regex.Matches(t.GetProperty("expr").GetString()!, @"\b(?:magpie|http_server)_[a-z_]+").Select(m => m.Value))
            .ToHashSet();
    }

    /// <summary>deploy/prometheus/prometheus.yml with each compose target (service:8080, or the indexer's DNS name) replaced by its local process.</summary>
    private static string PrometheusConfig(List<(string Service, MagpieProcess Process)> processes)
    {
        var stream = new YamlStream();
        using (var reader = new StreamReader(Path.Combine(RepoPaths.Root, "deploy", "prometheus", "prometheus.yml"))) stream.Load(reader);
        var root = (YamlMappingNode)stream.Documents[0].RootNode;
        foreach (var job in ((YamlSequenceNode)root["scrape_configs"]).Cast<YamlMappingNode>())
        {
            var services = new List<string>();
            if (job.Children.TryGetValue("static_configs", out var statics))
                foreach (var target in ((YamlSequenceNode)statics).Cast<YamlMappingNode>().SelectMany(c => (YamlSequenceNode)c["targets"]).Cast<YamlScalarNode>())
                    services.Add(target.Value!.Split(':')[0]);
            if (job.Children.Remove(new YamlScalarNode("dns_sd_configs")))
                services.Add(processes.Any(p => p.Service == "indexer") ? "indexer" : throw new InvalidOperationException("dns_sd_configs for a service not started"));
            var local = processes.Where(p => services.Contains(p.Service)).Select(p => new YamlScalarNode($"127.0.0.1:{p.Process.Port}")).ToList();
            Assert.NotEmpty(local);
            job.Children[new YamlScalarNode("static_configs")] = new YamlSequenceNode(new YamlMappingNode(new YamlScalarNode("targets"), new YamlSequenceNode(local)));
        }
        using var text = new StringWriter();
        stream.Save(text, assignAnchors: false);
        return text.ToString();
    }
}
