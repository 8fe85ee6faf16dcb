using System.Net.Http.Json;
using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using Magpie.Bench;
using Magpie.Tests.Fixtures;

// Usage: dotnet run -c Release --project bench/Magpie.Bench -- [--docs N] [--clients C] [--batch B] [--dir D]
//        dotnet run -c Release --project bench/Magpie.Bench -- etl [--docs N] [--rabbitmq-url amqp://…]
//        dotnet run -c Release --project bench/Magpie.Bench -- index [--docs N] [--kafka-docs M] [--embedded-docs 0 to skip the embedded side]
//        dotnet run -c Release --project bench/Magpie.Bench -- raw-index [--docs N]      (the raw side of `index` alone, for profiling)
//        dotnet run -c Release --project bench/Magpie.Bench -- index-phases [--docs N]   (raw; HTTP + store with no index; then indexing from the store: CPU µs per document of each)
//        dotnet run -c Release --project bench/Magpie.Bench -- rql-queries [--docs N] [--seconds S]  (full text and JS projections: HTTP vs the engine)
//        dotnet run -c Release --project bench/Magpie.Bench -- probe-queries [--docs N] [--index-dir D] [--seconds S]  (query kinds on the engine alone)
//        dotnet run -c Release --project bench/Magpie.Bench -- freshness [--docs N] [--rate R] [--probes P] [--poll-ms MS] [--trace FILE]
//        dotnet run -c Release --project bench/Magpie.Bench -- reduce-tree [--updates U]
//        dotnet run -c Release --project bench/Magpie.Bench -- map-reduce [--docs N]
//        dotnet run -c Release --project bench/Magpie.Bench -- facets [--docs N] [--runs R] [--per-term-runs P] [--warmup-seconds S]
//        dotnet run -c Release --project bench/Magpie.Bench -- subscriptions [--docs N]
//        dotnet run -c Release --project bench/Magpie.Bench -- pg [--docs N] [--runs R] [--warmup-seconds S]
//        dotnet run -c Release --project bench/Magpie.Bench -- load-document [--docs N]   (a map that load()s each post's owner vs the same map without; a rename)
//        dotnet run -c Release --project bench/Magpie.Bench -- patch-by-query [--docs N] (update by query vs POST /bulk_docs of the same changes)
//        dotnet run -c Release --project bench/Magpie.Bench -- ingest-nodes [--nodes 1,2,3] [--docs N] [--takeover-docs M]  (a partitioned store on N ingest processes; the takeover after a kill -9)
//        dotnet run -c Release --project bench/Magpie.Bench -- faults [--rounds N] [--outage-seconds S] [--kafka]
//        dotnet run -c Release --project bench/Magpie.Bench -- overload [--connections C] [--seconds S] [--docs N] [--write-share W] [--query-share Q] [--shed-pause-ms P]
var docs = Arg("--docs", 300_000);
var clients = (int)Arg("--clients", 8);
var batchSize = (int)Arg("--batch", 128);
var baseDir = ArgText("--dir") ?? Path.Combine(Path.GetTempPath(), "magpie-bench");
Directory.CreateDirectory(baseDir);
var run = Path.Combine(baseDir, DateTime.UtcNow.ToString("yyyyMMddHHmmss"));
switch (args.FirstOrDefault())
{
    case "etl": await RunEtlAsync(); return;
    case "sinks": await RunSinksAsync(); return;
    case "index": await RunIndexAsync(); return;
    case "raw-index": await RunRawIndexAsync(); return;
    case "index-phases": await RunIndexPhasesAsync(); return;
    case "probe-queries": await ProbeQueriesAsync(); return;
    case "rql-queries": await RunRqlQueriesAsync(); return;
    case "reduce-tree": RunReduceTree(); return;
    case "map-reduce": await RunMapReduceAsync(); return;
    case "freshness": await RunFreshnessAsync(); return;
    case "facets": await RunFacetsAsync(); return;
    case "subscriptions": await RunSubscriptionsAsync(); return;
    case "pg": await RunPgAsync(); return;
    case "load-document": await RunLoadDocumentAsync(); return;
    case "patch-by-query": await RunPatchByQueryAsync(); return;
    case "vectors": await RunVectorsAsync(); return;
    case "embeddings": await RunEmbeddingsAsync(); return;
    case "highlight": await RunHighlightAsync(); return;
    case "studio": await RunStudioAsync(); return;
    case "overload": await RunOverloadAsync(); return;
    case "faults": await RunFaultsAsync(); return;
    case "ingest-nodes": await RunIngestNodesAsync(); return;
    case "compaction": await RunCompactionAsync(); return;
}

Console.WriteLine($"generating {docs:N0} synthetic posts in batches of {batchSize}…");
var batches = IngestBenchmark.Batches(docs, batchSize, seed: 42);

// Warm-up first (JIT, tiered compilation, file creation), on both sides, then the measured run.
var warmup = IngestBenchmark.Batches(Math.Min(docs, 50_000), batchSize, seed: 7);
await IngestBenchmark.RawLogAsync(Path.Combine(run, "raw-warmup"), warmup, clients);
var raw = await IngestBenchmark.RawLogAsync(Path.Combine(run, "raw"), batches, clients);

var port = 18000 + Random.Shared.Next(1000);
using var magpie = StartMagpie(Path.Combine(run, "magpie"), port);
await WaitHealthy(port);
await IngestBenchmark.HttpBulkAsync(new Uri($"http://127.0.0.1:{port}/"), warmup.Select(b => b.Select(w => w with { Id = "warmup/" + w.Id }).ToArray()).ToList(), clients);
var http = await IngestBenchmark.HttpBulkAsync(new Uri($"http://127.0.0.1:{port}/"), batches, clients);
magpie.Kill();
magpie.WaitForExit();
try { Directory.Delete(run, recursive: true); } catch (IOException) { }

var ratio = http.DocsPerSecond / raw.DocsPerSecond;
Console.WriteLine();
Console.WriteLine($"{"side",-36} {"docs/s",12} {"MB/s",8} {"p50 ms",8} {"p99 ms",8}");
foreach (var r in new[] { http, raw })
    Console.WriteLine($"{r.Name,-36} {r.DocsPerSecond,12:N0} {r.MBPerSecond,8:F1} {r.P50,8:F1} {r.P99,8:F1}");
Console.WriteLine($"ratio magpie/raw: {ratio:F2}   ({docs:N0} docs, {clients} clients, batches of {batchSize}, {Environment.ProcessorCount} cores)");
Console.WriteLine(JsonSerializer.Serialize(new
{
    benchmark = "ingest", docs, clients, batch = batchSize, cores = Environment.ProcessorCount,
    magpie_docs_per_s = Math.Round(http.DocsPerSecond), magpie_mb_per_s = Math.Round(http.MBPerSecond, 1),
    magpie_p50_ms = Math.Round(http.P50, 2), magpie_p99_ms = Math.Round(http.P99, 2),
    raw_docs_per_s = Math.Round(raw.DocsPerSecond), raw_mb_per_s = Math.Round(raw.MBPerSecond, 1),
    raw_p50_ms = Math.Round(raw.P50, 2), raw_p99_ms = Math.Round(raw.P99, 2),
    ratio = Math.Round(ratio, 3),
}));

async Task RunSinksAsync()
{
    var n = (int)Arg("--docs", 100_000);
    await using var rabbit = ArgText("--rabbitmq-url") is { } url ? null : await RabbitMqBroker.StartAsync();
    var rabbitUrl = ArgText("--rabbitmq-url") ?? rabbit!.Url;
    await using var kafka = await KafkaBroker.StartAsync();
    var port = 18000 + Random.Shared.Next(1000);
    using var magpie = StartMagpie(Path.Combine(run, "magpie-sinks"), port);
    await WaitHealthy(port);
    var uri = new Uri($"http://127.0.0.1:{port}/");
    var warmup = IngestBenchmark.Batches(10_000, 128, seed: 7).SelectMany(b => b).ToList();
    var posts = IngestBenchmark.Batches(n, 128, seed: 42).SelectMany(b => b).ToList();
    Console.WriteLine($"warm-up (10,000 messages), then {n:N0} synthetic posts; RabbitMQ at {rabbitUrl}, Kafka at {kafka.BootstrapServers}");
    await SinkBenchmark.RabbitMqAsync(uri, rabbitUrl, warmup, "warmup");
    var (rabbitSink, rabbitBare) = await SinkBenchmark.RabbitMqAsync(uri, rabbitUrl, posts, "measured");
    await SinkBenchmark.KafkaAsync(uri, kafka.BootstrapServers, warmup, "warmup");
    var (kafkaSink, kafkaBare) = await SinkBenchmark.KafkaAsync(uri, kafka.BootstrapServers, posts, "measured");
    magpie.Kill();
    magpie.WaitForExit();
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }
    Console.WriteLine();
    Console.WriteLine($"{"side",-44} {"msgs/s",12} {"MB/s",8} {"seconds",8}");
    foreach (var r in new[] { rabbitSink, rabbitBare, kafkaSink, kafkaBare })
        Console.WriteLine($"{r.Name,-44} {r.DocsPerSecond,12:N0} {r.MBPerSecond,8:F1} {r.Elapsed.TotalSeconds,8:F1}");
    var (rabbitRatio, kafkaRatio) = (rabbitSink.DocsPerSecond / rabbitBare.DocsPerSecond, kafkaSink.DocsPerSecond / kafkaBare.DocsPerSecond);
    Console.WriteLine($"ratio sink/bare: RabbitMQ {rabbitRatio:F2}, Kafka {kafkaRatio:F2}   ({n:N0} messages, {Environment.ProcessorCount} cores)");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "sinks", messages = n, cores = Environment.ProcessorCount,
        rabbitmq_sink_msgs_per_s = Math.Round(rabbitSink.DocsPerSecond), rabbitmq_bare_msgs_per_s = Math.Round(rabbitBare.DocsPerSecond), rabbitmq_ratio = Math.Round(rabbitRatio, 3),
        kafka_sink_msgs_per_s = Math.Round(kafkaSink.DocsPerSecond), kafka_bare_msgs_per_s = Math.Round(kafkaBare.DocsPerSecond), kafka_ratio = Math.Round(kafkaRatio, 3),
    }));
}

async Task RunEtlAsync()
{
    var n = Arg("--docs", 100_000);
    await using var rabbit = ArgText("--rabbitmq-url") is { } url ? null : await RabbitMqBroker.StartAsync();
    var rabbitUrl = ArgText("--rabbitmq-url") ?? rabbit!.Url;
    var etlPort = 18000 + Random.Shared.Next(1000);
    using var etlMagpie = StartMagpie(Path.Combine(run, "magpie-etl"), etlPort);
    await WaitHealthy(etlPort);
    var uri = new Uri($"http://127.0.0.1:{etlPort}/");
    Console.WriteLine($"warm-up (10,000 docs), then {n:N0} synthetic posts; RabbitMQ at {rabbitUrl}");
    Func<TimeSpan?> brokerCpu = () => rabbit?.ServerCpu();
    await EtlBenchmark.RunAsync(uri, etlMagpie, rabbitUrl, brokerCpu, IngestBenchmark.Batches(10_000, 128, seed: 7).Select(b => b.Select(w => w with { Id = "warmup/" + w.Id }).ToArray()).ToList(), "warmup");
    var (etl, bare, bareHeaders) = await EtlBenchmark.RunAsync(uri, etlMagpie, rabbitUrl, brokerCpu, IngestBenchmark.Batches(n, 128, seed: 42), "measured");
    etlMagpie.Kill();
    etlMagpie.WaitForExit();
    await EtlBenchmark.CleanUpAsync(rabbitUrl, ["warmup", "measured"]);
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }
    var etlRatio = etl.Result.DocsPerSecond / bare.Result.DocsPerSecond;
    var sameHeadersRatio = etl.Result.DocsPerSecond / bareHeaders.Result.DocsPerSecond;
    Console.WriteLine();
    Console.WriteLine($"{"side",-44} {"msgs/s",12} {"MB/s",8} {"seconds",8} {"broker cpu s",13} {"publisher cpu s",16}");
    foreach (var side in new[] { etl, bare, bareHeaders })
    {
        var r = side.Result;
        Console.WriteLine($"{r.Name,-44} {r.DocsPerSecond,12:N0} {r.MBPerSecond,8:F1} {r.Elapsed.TotalSeconds,8:F1} {side.BrokerCpuSeconds,13:F1} {side.PublisherCpuSeconds,16:F1}");
    }
    Console.WriteLine($"ratio magpie/bare: {etlRatio:F2}; magpie/bare with the same headers: {sameHeadersRatio:F2}   ({n:N0} docs, {Environment.ProcessorCount} cores)");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "etl-rabbitmq", docs = n, cores = Environment.ProcessorCount,
        magpie_msgs_per_s = Math.Round(etl.Result.DocsPerSecond), bare_msgs_per_s = Math.Round(bare.Result.DocsPerSecond),
        bare_same_headers_msgs_per_s = Math.Round(bareHeaders.Result.DocsPerSecond),
        magpie_mb_per_s = Math.Round(etl.Result.MBPerSecond, 1), bare_mb_per_s = Math.Round(bare.Result.MBPerSecond, 1),
        ratio = Math.Round(etlRatio, 3), ratio_same_headers = Math.Round(sameHeadersRatio, 3),
        broker_cpu_s = new { magpie = etl.BrokerCpuSeconds, bare = bare.BrokerCpuSeconds, bare_same_headers = bareHeaders.BrokerCpuSeconds },
        publisher_cpu_s = new { magpie = etl.PublisherCpuSeconds, bare = bare.PublisherCpuSeconds, bare_same_headers = bareHeaders.PublisherCpuSeconds },
    }));
}

async Task RunRawIndexAsync()
{
    var n = (int)Arg("--docs", 300_000);
    Console.WriteLine($"generating {n:N0} synthetic posts…");
    var posts = IngestBenchmark.Batches(n, 512, seed: 42);
    await IndexBenchmark.RawLuceneAsync(Path.Combine(run, "raw-warmup"), IngestBenchmark.Batches(50_000, 512, seed: 7));
    Console.WriteLine($"measuring (pid {Environment.ProcessId})…");
    var raw = await IndexBenchmark.RawLuceneAsync(Path.Combine(run, "raw"), posts);
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }
    Console.WriteLine($"raw Lucene.Net: {raw.DocsPerSecond:N0} docs/s ({raw.Elapsed.TotalSeconds:F1} s, {n:N0} docs)");
    Console.WriteLine(JsonSerializer.Serialize(new { benchmark = "raw-index", docs = n, raw_docs_per_s = Math.Round(raw.DocsPerSecond) }));
}

// Where the embedded pipeline's time goes: the same posts as `index`, written with no index defined (HTTP + store alone),
// then indexed from the store (feed + map + Lucene alone), against raw Lucene; CPU per document of the process doing each. The
// index-from-store row includes reading past the warm-up's documents, which the measured index does not map.
async Task RunIndexPhasesAsync()
{
    var n = (int)Arg("--docs", 600_000);
    Console.WriteLine($"generating {n:N0} synthetic posts…");
    var posts = IngestBenchmark.Batches(n, 512, seed: 42);
    var warmup = IngestBenchmark.Batches(50_000, 512, seed: 7);
    await IndexBenchmark.RawLuceneAsync(Path.Combine(run, "raw-warmup"), warmup);
    await WaitQuietAsync("raw", Process.GetCurrentProcess());
    var cpu = Process.GetCurrentProcess().TotalProcessorTime;
    var raw = await IndexBenchmark.RawLuceneAsync(Path.Combine(run, "raw"), posts);
    var rawCpu = (Process.GetCurrentProcess().TotalProcessorTime - cpu).TotalMicroseconds / n;

    var port = 18000 + Random.Shared.Next(1000);
    using var magpie = StartMagpie(Path.Combine(run, "phases"), port);
    await WaitHealthy(port);
    using var http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{port}/"), Timeout = TimeSpan.FromMinutes(5) };
    await IngestBenchmark.HttpBulkAsync(http.BaseAddress, warmup.Select(b => b.Select(w => w with { Id = "warmup/" + w.Id }).ToArray()).ToList(), 8);
    // As `index` does: the indexing code runs once before the clock, so the index-from-store row is not the JIT's first pass.
    await IndexBenchmark.WarmUpIndexingAsync(http, [http], warmup.Sum(b => b.Length));
    double CpuMicros() { magpie.Refresh(); return magpie.TotalProcessorTime.TotalMicroseconds; }
    await WaitQuietAsync("magpie", magpie);
    Console.WriteLine($"HTTP bulk + store, no index (pid {magpie.Id})…");   // a profiler attaches here
    var before = CpuMicros();
    var ingest = await IngestBenchmark.HttpBulkAsync(http.BaseAddress, posts, 8);
    var ingestCpu = (CpuMicros() - before) / n;
    await WaitQuietAsync("magpie", magpie);
    Console.WriteLine($"indexing from the store (pid {magpie.Id})…");
    before = CpuMicros();
    var watch = Stopwatch.StartNew();
    await IndexBenchmark.DefineAsync(http);
    await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(30));
    var indexRate = n / watch.Elapsed.TotalSeconds;
    var indexCpu = (CpuMicros() - before) / n;
    magpie.Kill();
    magpie.WaitForExit();
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }

    var ingestRate = n / ingest.Elapsed.TotalSeconds;
    Console.WriteLine();
    Console.WriteLine($"{"phase",-48} {"docs/s",10} {"CPU µs/doc",11}");
    Console.WriteLine($"{"raw Lucene (bench process)",-48} {raw.DocsPerSecond,10:N0} {rawCpu,11:F1}");
    Console.WriteLine($"{"HTTP bulk + store, no index (magpie process)",-48} {ingestRate,10:N0} {ingestCpu,11:F1}");
    Console.WriteLine($"{"index from the store: feed + map + Lucene",-48} {indexRate,10:N0} {indexCpu,11:F1}");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "index-phases", docs = n, raw_docs_per_s = Math.Round(raw.DocsPerSecond), raw_cpu_us_per_doc = Math.Round(rawCpu, 1),
        ingest_docs_per_s = Math.Round(ingestRate), ingest_cpu_us_per_doc = Math.Round(ingestCpu, 1),
        index_from_store_docs_per_s = Math.Round(indexRate), index_from_store_cpu_us_per_doc = Math.Round(indexCpu, 1),
    }));
}

// Scratch: the index benchmark's three query kinds on an engine index of raw-index's posts, one at a time, timed.
async Task ProbeQueriesAsync()
{
    // Scratch timing of the query kinds on an engine index, without HTTP or the store: one client, then 16 at once.
    // --index-dir keeps the index between runs (built once), so a profiler can attach to the query phase alone.
    var n = (int)Arg("--docs", 300_000);
    var dir = ArgText("--index-dir") ?? Path.Combine(run, "probe");
    if (!Directory.Exists(dir)) await IndexBenchmark.RawLuceneAsync(dir, IngestBenchmark.Batches(n, 512, seed: 42));
    using var engine = new Magpie.Indexer.Lucene.LuceneEngine(Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
    var index = engine.Open(dir);
    foreach (var (kind, q) in new (string, Magpie.Contracts.Search.SearchQuery)[]
    {
        ("term", new Magpie.Contracts.Search.TermQuery("Tags", "docker")),
        ("range", new Magpie.Contracts.Search.DoubleRangeQuery("Score@num", 10, 50)),
        ("full-text", new Magpie.Contracts.Search.FullTextQuery("Body", "cache deploy")),
    })
    {
        var request = new Magpie.Contracts.Search.SearchRequest(q, [], 25);
        for (var i = 0; i < 3; i++)
        {
            var t = Stopwatch.StartNew();
            var page = await index.SearchAsync(request);
            Console.WriteLine($"{kind}: {page.TotalHits:N0} hits in {t.Elapsed.TotalMilliseconds:F1} ms");
        }
        var seconds = Arg("--seconds", 10);
        var end = DateTime.UtcNow.AddSeconds(seconds);
        var latencies = new System.Collections.Concurrent.ConcurrentBag<double>();
        await Task.WhenAll(Enumerable.Range(0, 16).Select(_ => Task.Run(async () =>
        {
            while (DateTime.UtcNow < end)
            {
                var t = Stopwatch.StartNew();
                await index.SearchAsync(request);
                latencies.Add(t.Elapsed.TotalMilliseconds);
            }
        })));
        var all = latencies.ToList();
        Console.WriteLine($"{kind}, 16 clients: {all.Count / (double)seconds:N0} q/s, p50 {IndexBenchmark.Percentile(all, 0.5):F1} ms");
    }
    index.Close();
    if (ArgText("--index-dir") is null) try { Directory.Delete(run, recursive: true); } catch (IOException) { }
}

async Task RunRqlQueriesAsync()
{
    // Both sides over the same posts: the embedded executable over HTTP (index built from the change feed), and the same
    // fields written straight into a Lucene index this process opens with the engine.
    var n = (int)Arg("--docs", 1_000_000);
    var seconds = TimeSpan.FromSeconds(Arg("--seconds", 10));
    var posts = IngestBenchmark.Batches(n, 512, seed: 42);
    var rawDir = Path.Combine(run, "rql-raw");
    await IndexBenchmark.RawLuceneAsync(rawDir, posts);
    using var loaded = await StartLoadedAsync("rql-queries", n);
    var (magpie, http) = (loaded.Process, loaded.Http);
    await IndexBenchmark.DefineAsync(http);
    await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(60));
    using var engine = new Magpie.Indexer.Lucene.LuceneEngine(Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
    var raw = engine.Open(rawDir);
    await WaitQuietAsync("rql-queries", magpie, Process.GetCurrentProcess());
    var rows = new List<(string Kind, int Clients, RqlQueryBenchmark.Latencies Http, RqlQueryBenchmark.Latencies? Engine)>();
    foreach (var (kind, rql, query) in RqlQueryBenchmark.Kinds)
        foreach (var clients in new[] { 1, 16 })
        {
            var overHttp = await RqlQueryBenchmark.HttpAsync(http, rql, clients, seconds);
            var onEngine = query is null ? null : await RqlQueryBenchmark.EngineAsync(raw, query, clients, seconds);
            rows.Add((kind, clients, overHttp, onEngine));
            Console.WriteLine($"{kind}, {clients} client(s): HTTP p50 {overHttp.P50:F1} ms" + (onEngine is null ? "" : $", engine p50 {onEngine.P50:F1} ms"));
        }
    raw.Close();
    StopMagpie(magpie);
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }

    double P50(string kind, int clients) => rows.Single(r => r.Kind == kind && r.Clients == clients).Http.P50;
    Console.WriteLine();
    Console.WriteLine($"{"kind",-14} {"clients",7} {"http p50",9} {"p99",8} {"q/s",7} {"engine p50",11} {"p99",8} {"q/s",7}");
    foreach (var r in rows)
        Console.WriteLine($"{r.Kind,-14} {r.Clients,7} {r.Http.P50,9:F1} {r.Http.P99,8:F1} {r.Http.PerSecond,7:N0} " +
            (r.Engine is { } e ? $"{e.P50,11:F1} {e.P99,8:F1} {e.PerSecond,7:N0}" : $"{"-",11} {"-",8} {"-",7}"));
    Console.WriteLine($"js projection / plain page (p50): 1 client {P50("js projection", 1) / P50("plain page", 1):F2}, 16 clients {P50("js projection", 16) / P50("plain page", 16):F2}   ({n:N0} posts, {Environment.ProcessorCount} cores)");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "rql-queries", docs = n, cores = Environment.ProcessorCount, seconds = seconds.TotalSeconds,
        rows = rows.Select(r => new
        {
            kind = r.Kind, clients = r.Clients, http_p50_ms = Math.Round(r.Http.P50, 2), http_p99_ms = Math.Round(r.Http.P99, 2), http_qps = Math.Round(r.Http.PerSecond),
            engine_p50_ms = r.Engine is { } e ? Math.Round(e.P50, 2) : (double?)null, engine_p99_ms = r.Engine is { } e2 ? Math.Round(e2.P99, 2) : (double?)null,
        }),
        projection_ratio_1 = Math.Round(P50("js projection", 1) / P50("plain page", 1), 2),
        projection_ratio_16 = Math.Round(P50("js projection", 16) / P50("plain page", 16), 2),
    }));
}

async Task RunIndexAsync()
{
    var n = (int)Arg("--docs", 1_000_000);
    var kafkaDocs = (int)Arg("--kafka-docs", n);
    var machineAtStart = MachineGauge.Measure();
    Console.WriteLine(machineAtStart);
    Console.WriteLine($"generating {n:N0} synthetic posts…");
    var posts = IngestBenchmark.Batches(n, 512, seed: 42);
    var warmup = IngestBenchmark.Batches(50_000, 512, seed: 7);

    await IndexBenchmark.RawLuceneAsync(Path.Combine(run, "raw-warmup"), warmup);
    var rawFirst = await RawAsync("raw");

    // Embedded: one process (--embedded-docs 0 skips it, with its freshness, query and cursor figures).
    var embedded = Arg("--embedded-docs", n) > 0 ? await EmbeddedAsync() : null;

    // Kafka mode: an ingest process relaying to a broker, an indexer process consuming magpie.changes.
    double? kafkaRate = null, kafkaRebuildRate = null;
    if (kafkaDocs > 0)
    {
        await using var broker = await KafkaBroker.StartOwnedAsync();
        var ingestPort = 19000 + Random.Shared.Next(500);
        var indexerPort = ingestPort + 500;
        using var ingest = StartMagpie(Path.Combine(run, "kafka-ingest"), ingestPort, "--target", "ingest", "--kafka", broker.BootstrapServers);
        using var indexer = StartMagpie(Path.Combine(run, "kafka-indexer"), indexerPort, "--target", "indexer", "--kafka", broker.BootstrapServers);
        await WaitHealthy(ingestPort);
        await WaitHealthy(indexerPort);
        using var indexerHttp = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{indexerPort}/"), Timeout = TimeSpan.FromMinutes(5) };
        var ingestUri = new Uri($"http://127.0.0.1:{ingestPort}/");
        await IngestBenchmark.HttpBulkAsync(ingestUri, warmup.Select(b => b.Select(w => w with { Id = "warmup/" + w.Id }).ToArray()).ToList(), 8);
        await IndexBenchmark.WarmUpIndexingAsync(indexerHttp, [indexerHttp], warmup.Sum(b => b.Length));
        await IndexBenchmark.DefineAsync(indexerHttp);
        var kafkaPosts = IngestBenchmark.Serialize(posts.SelectMany(b => b).Take(kafkaDocs).Chunk(512).ToList());
        await WaitQuietAsync("kafka", ingest, indexer, Process.GetCurrentProcess());
        TimeSpan[] Cpu() { ingest.Refresh(); indexer.Refresh(); return [ingest.TotalProcessorTime, indexer.TotalProcessorTime, Process.GetCurrentProcess().TotalProcessorTime, MachineBusy()]; }
        var cpuBefore = Cpu();
        var watch = Stopwatch.StartNew();
        await IngestBenchmark.HttpBulkAsync(ingestUri, kafkaPosts, 8);
        await IndexBenchmark.WaitIndexedAsync([indexerHttp], kafkaDocs, TimeSpan.FromMinutes(30));
        kafkaRate = kafkaDocs / watch.Elapsed.TotalSeconds;
        var cpu = Cpu().Zip(cpuBefore, (a, b) => (a - b).TotalMicroseconds / kafkaDocs).ToArray();
        Console.WriteLine($"  kafka index (all shards): {await IndexBenchmark.RefreshesAsync(indexerHttp)}");
        Console.WriteLine($"kafka pipeline: {kafkaRate:N0} docs/s ({watch.Elapsed.TotalSeconds:F1} s, {kafkaDocs:N0} docs); " +
            $"CPU µs/doc: ingest {cpu[0]:F0}, indexer {cpu[1]:F0}, this client {cpu[2]:F0}, the rest (the broker) {cpu[3] - cpu[0] - cpu[1] - cpu[2]:F0}");

        // A rebuild from the topic: the same definition under a new name reads magpie.changes from its start, with the ingest idle,
        // so the indexer and the broker have the cores. What a user sees when a definition changes or an indexer joins.
        (await indexerHttp.DeleteAsync($"indexes/{IndexBenchmark.Name}")).EnsureSuccessStatusCode();
        const string rebuild = IndexBenchmark.Name + "Rebuilt";
        cpuBefore = Cpu();
        watch.Restart();
        await IndexBenchmark.DefineAsync(indexerHttp, rebuild);
        await IndexBenchmark.WaitIndexedAsync([indexerHttp], kafkaDocs, TimeSpan.FromMinutes(30), rebuild);
        kafkaRebuildRate = kafkaDocs / watch.Elapsed.TotalSeconds;
        cpu = Cpu().Zip(cpuBefore, (a, b) => (a - b).TotalMicroseconds / kafkaDocs).ToArray();
        Console.WriteLine($"  kafka rebuilt index (all shards): {await IndexBenchmark.RefreshesAsync(indexerHttp, rebuild)}");
        Console.WriteLine($"kafka rebuild from the topic: {kafkaRebuildRate:N0} docs/s ({watch.Elapsed.TotalSeconds:F1} s); " +
            $"CPU µs/doc: indexer {cpu[1]:F0}, the rest (the broker) {cpu[3] - cpu[0] - cpu[1] - cpu[2]:F0}");
        ingest.Kill();
        indexer.Kill();
    }
    // Raw again, last: this machine's speed swings between neighbouring minutes (raw 7.6k–16.9k docs/s within one hour once),
    // so every ratio is taken against raw's rate over both runs around the pipelines (all posts over all the time), not one minute of it.
    var rawLast = await RawAsync("raw-last");
    var rawRate = 2 * n / (rawFirst.Run.Elapsed + rawLast.Run.Elapsed).TotalSeconds;
    var rawCpu = (rawFirst.Cpu + rawLast.Cpu) / 2;
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }
    var machineAtEnd = MachineGauge.Measure();
    Console.WriteLine(machineAtEnd);

    Console.WriteLine();
    Console.WriteLine($"{"side",-40} {"docs/s",10} {"ratio to raw",13}");
    Console.WriteLine($"{"raw Lucene IndexWriter (same fields)",-40} {rawRate,10:N0} {1.0,13:F2}   (both runs: {rawFirst.Run.DocsPerSecond:N0} first, {rawLast.Run.DocsPerSecond:N0} last)");
    if (embedded is { } e) Console.WriteLine($"{"embedded pipeline (HTTP → index)",-40} {e.Rate,10:N0} {e.Rate / rawRate,13:F2}");
    if (kafkaRate is { } k) Console.WriteLine($"{"kafka pipeline (ingest → Kafka → indexer)",-40} {k,10:N0} {k / rawRate,13:F2}");
    if (kafkaRebuildRate is { } kr2) Console.WriteLine($"{"kafka rebuild (topic → indexer)",-40} {kr2,10:N0} {kr2 / rawRate,13:F2}");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "index", docs = n, kafka_docs = kafkaDocs, cores = Environment.ProcessorCount,
        raw_docs_per_s = Math.Round(rawRate), raw_cpu_us_per_doc = Math.Round(rawCpu.TotalMicroseconds / n),
        raw_runs_docs_per_s = new[] { Math.Round(rawFirst.Run.DocsPerSecond), Math.Round(rawLast.Run.DocsPerSecond) },
        embedded_docs_per_s = Embedded(r => r.Rate, 0),
        embedded_cpu_us_per_doc = Embedded(r => r.ServerCpu.TotalMicroseconds / n, 0),
        map_us_per_doc = Embedded(r => r.MapMicros, 1),
        kafka_docs_per_s = kafkaRate is { } kr ? Math.Round(kr) : (double?)null,
        ratio_embedded = Embedded(r => r.Rate / rawRate, 3),
        ratio_kafka = kafkaRate is { } kk ? Math.Round(kk / rawRate, 3) : (double?)null,
        kafka_rebuild_docs_per_s = kafkaRebuildRate is { } rb ? Math.Round(rb) : (double?)null,
        ratio_kafka_rebuild = kafkaRebuildRate is { } rb2 ? Math.Round(rb2 / rawRate, 3) : (double?)null,
        freshness_rate_docs_per_s = Embedded(r => r.Rate / 2, 0),
        freshness_p50_ms = Embedded(r => IndexBenchmark.Percentile(r.Fresh, 0.5), 1),
        freshness_p99_ms = Embedded(r => IndexBenchmark.Percentile(r.Fresh, 0.99), 1),
        query = embedded?.Latency.ToDictionary(l => l.Key, l => new { p50_ms = Math.Round(IndexBenchmark.Percentile(l.Value, 0.5), 1), p99_ms = Math.Round(IndexBenchmark.Percentile(l.Value, 0.99), 1), qps = Math.Round(l.Value.Count / 15.0) }),
        cursor_depth = embedded?.Depth,
        page1_p50_ms = Embedded(r => IndexBenchmark.Percentile(r.Page1, 0.5), 2),
        deep_p50_ms = Embedded(r => IndexBenchmark.Percentile(r.Deep, 0.5), 2),
        cursor_ratio = Embedded(r => IndexBenchmark.Percentile(r.Deep, 0.5) / IndexBenchmark.Percentile(r.Page1, 0.5), 2),
        machine = new[] { machineAtStart.Json, machineAtEnd.Json },
    }));

    // The raw side over the measured posts, with the CPU it took per post (the pipelines print the same measure) and the time the
    // hypervisor gave to other guests while it ran (steal: a slow run with steal is the machine, not Lucene).
    async Task<((double DocsPerSecond, TimeSpan Elapsed) Run, TimeSpan Cpu)> RawAsync(string name)
    {
        await WaitQuietAsync(name, Process.GetCurrentProcess());
        var (cpu, steal) = (Process.GetCurrentProcess().TotalProcessorTime, MachineSteal());
        var result = await IndexBenchmark.RawLuceneAsync(Path.Combine(run, name), posts);
        (cpu, steal) = (Process.GetCurrentProcess().TotalProcessorTime - cpu, MachineSteal() - steal);
        Console.WriteLine($"raw Lucene ({name}): {result.DocsPerSecond:N0} docs/s ({result.Elapsed.TotalSeconds:F1} s); CPU µs/doc {cpu.TotalMicroseconds / n:F0}; " +
            $"steal {steal.TotalSeconds:F1} s");
        Directory.Delete(Path.Combine(run, name), recursive: true);
        return (result, cpu);
    }

    // A figure of the embedded side, rounded, or null when it was skipped.
    double? Embedded(Func<EmbeddedRun, double> figure, int digits) => embedded is null ? null : Math.Round(figure(embedded), digits);

    async Task<EmbeddedRun> EmbeddedAsync()
    {
        // Warm-up writes go to another collection (not mapped), then the measured posts.
        var port = 18000 + Random.Shared.Next(1000);
        using var magpie = StartMagpie(Path.Combine(run, "embedded"), port);
        await WaitHealthy(port);
        using var http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{port}/"), Timeout = TimeSpan.FromMinutes(5) };
        await IngestBenchmark.HttpBulkAsync(http.BaseAddress, warmup.Select(b => b.Select(w => w with { Id = "warmup/" + w.Id }).ToArray()).ToList(), 8);
        await IndexBenchmark.WarmUpIndexingAsync(http, [http], warmup.Sum(b => b.Length));
        await IndexBenchmark.DefineAsync(http);
        var bodies = IngestBenchmark.Serialize(posts);
        await WaitQuietAsync("embedded", magpie, Process.GetCurrentProcess());
        // CPU of both processes on the shared cores: magpie's, and this client's (HTTP sends and status polls).
        magpie.Refresh();
        var (serverCpu, clientCpu) = (magpie.TotalProcessorTime, Process.GetCurrentProcess().TotalProcessorTime);
        var watch = Stopwatch.StartNew();
        await IngestBenchmark.HttpBulkAsync(http.BaseAddress, bodies, 8);
        await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(30));
        var embeddedRate = n / watch.Elapsed.TotalSeconds;
        magpie.Refresh();
        (serverCpu, clientCpu) = (magpie.TotalProcessorTime - serverCpu, Process.GetCurrentProcess().TotalProcessorTime - clientCpu);
        var mapMicros = await IndexBenchmark.MapMicrosPerDocumentAsync(http);
        // How often the worker refreshed during the load, and what those refreshes (Lucene's flushes) took: smaller segments cost more.
        Console.WriteLine($"  embedded index: {await IndexBenchmark.RefreshesAsync(http)}");
        Console.WriteLine($"embedded pipeline: {embeddedRate:N0} docs/s ({watch.Elapsed.TotalSeconds:F1} s); JS map {mapMicros:F1} µs per document (last 20 batches); " +
            $"CPU µs/doc: magpie {serverCpu.TotalMicroseconds / n:F0}, this client {clientCpu.TotalMicroseconds / n:F0}");

        var fresh = await IndexBenchmark.FreshnessAsync(http, http, embeddedRate / 2, probes: 200);
        Console.WriteLine($"freshness at {embeddedRate / 2:N0} docs/s: p50 {IndexBenchmark.Percentile(fresh, 0.5):F1} ms, p99 {IndexBenchmark.Percentile(fresh, 0.99):F1} ms");

        var latency = new Dictionary<string, List<double>>();
        foreach (var (kind, rql) in new[]
        {
            ("term", $"from index '{IndexBenchmark.Name}' where Tags = 'docker'"),
            ("range", $"from index '{IndexBenchmark.Name}' where Score between 10 and 50"),
            ("full-text", $"from index '{IndexBenchmark.Name}' where search(Body, 'cache deploy')"),
        })
        {
            latency[kind] = await IndexBenchmark.LatencyAsync(http, rql, 16, TimeSpan.FromSeconds(15));
            Console.WriteLine($"{kind,-10} top-25, 16 clients: {latency[kind].Count / 15.0:N0} q/s, p50 {IndexBenchmark.Percentile(latency[kind], 0.5):F1} ms, p99 {IndexBenchmark.Percentile(latency[kind], 0.99):F1} ms");
        }
        var depth = Math.Min(1_000_000, n - 25);
        var (page1, deep) = await IndexBenchmark.CursorDepthAsync(http, $"from index '{IndexBenchmark.Name}' order by Score desc", depth, 50);
        var depthRatio = IndexBenchmark.Percentile(deep, 0.5) / IndexBenchmark.Percentile(page1, 0.5);
        Console.WriteLine($"order by Score desc, 25 per page: page 1 p50 {IndexBenchmark.Percentile(page1, 0.5):F1} ms, cursor page at depth {depth:N0} p50 {IndexBenchmark.Percentile(deep, 0.5):F1} ms (ratio {depthRatio:F2})");
        magpie.Kill();
        magpie.WaitForExit();
        return new EmbeddedRun(embeddedRate, serverCpu, mapMicros, fresh, latency, depth, page1, deep);
    }
}

// Freshness alone, with what the index worker did meanwhile (its recent batch stats, polled): for profiling the tail.
async Task RunFreshnessAsync()
{
    var n = (int)Arg("--docs", 300_000);
    var rate = Arg("--rate", 5_000);
    var probes = (int)Arg("--probes", 300);
    var pollMs = Arg("--poll-ms", 0);   // a pause between a probe's queries (0: back to back, the figure in BENCHMARKS)
    var machine = MachineGauge.Measure();
    Console.WriteLine(machine);
    var port = 18000 + Random.Shared.Next(1000);
    using var magpie = StartMagpie(Path.Combine(run, "freshness"), port);
    await WaitHealthy(port);
    using var http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{port}/"), Timeout = TimeSpan.FromMinutes(5) };
    await IndexBenchmark.DefineAsync(http);
    await IngestBenchmark.HttpBulkAsync(http.BaseAddress, IngestBenchmark.Batches(n, 512, seed: 42), 8);
    await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(30));
    Console.WriteLine($"{n:N0} posts indexed; writing {rate:N0} docs/s with {probes} probes…");
    var (probed, batches) = await IndexBenchmark.FreshnessWithBatchesAsync(http, rate, probes, TimeSpan.FromMilliseconds(pollMs));
    var samples = probed.Select(p => p.Ms).ToList();
    StopMagpie(magpie);
    // --trace FILE: every probe and every batch the worker reported, one JSON line each, to line slow probes up with batches.
    if (ArgText("--trace") is { } trace)
        await File.WriteAllLinesAsync(trace, probed.Select(p => JsonSerializer.Serialize(new { probe = p.Acknowledged, p.Ms, p.WriteMs, p.Queries }))
            .Concat(batches.Select(b => JsonSerializer.Serialize(new { batch = b.At, b.Documents, b.ReadMs, b.MapMs, b.LuceneMs, b.CommitMs }))));
    double P(IEnumerable<double> v, double q) => IndexBenchmark.Percentile(v.ToList(), q);
    Console.WriteLine($"freshness at {rate:N0} docs/s over {n:N0}{(pollMs > 0 ? $", polled every {pollMs} ms" : "")}: p50 {P(samples, 0.5):F1} ms, p99 {P(samples, 0.99):F1} ms, max {samples.Max():F1} ms");
    // The probes start as soon as the load is indexed, while its merges still run: the first 20 s are told apart from the rest.
    var settled = probed[0].Acknowledged + TimeSpan.FromSeconds(20);
    var (early, late) = (probed.Where(p => p.Acknowledged < settled).Select(p => p.Ms).ToList(), probed.Where(p => p.Acknowledged >= settled).Select(p => p.Ms).ToList());
    if (early.Count > 0 && late.Count > 0)
        Console.WriteLine($"  first 20 s after the load: {early.Count} probes, p50 {P(early, 0.5):F1} ms, p99 {P(early, 0.99):F1} ms; after them: {late.Count} probes, p50 {P(late, 0.5):F1} ms, p99 {P(late, 0.99):F1} ms");
    Console.WriteLine($"{"batches: " + batches.Count,-16} {"p50",8} {"p99",8} {"max",8}");
    foreach (var (name, values) in new (string, IEnumerable<double>)[]
    {
        ("documents", batches.Select(b => (double)b.Documents)), ("map ms", batches.Select(b => b.MapMs)),
        ("lucene ms", batches.Select(b => b.LuceneMs)), ("commit ms", batches.Where(b => b.CommitMs > 0).Select(b => b.CommitMs)),
    })
        if (values.Any()) Console.WriteLine($"{name,-16} {P(values, 0.5),8:F1} {P(values, 0.99),8:F1} {values.Max(),8:F1}");
    Console.WriteLine(JsonSerializer.Serialize(new { benchmark = "freshness", docs = n, rate, probes, poll_ms = pollMs, p50_ms = Math.Round(P(samples, 0.5), 1), p99_ms = Math.Round(P(samples, 0.99), 1), max_ms = Math.Round(samples.Max(), 1),
        first_20s_p99_ms = early.Count > 0 ? Math.Round(P(early, 0.99), 1) : (double?)null, after_20s_p99_ms = late.Count > 0 ? Math.Round(P(late, 0.99), 1) : (double?)null,
        machine = machine.Json }));
}

void RunReduceTree()
{
    var sizes = new[] { 1_000, 100_000, 1_000_000 };
    var rows = ReduceTreeBenchmark.Run(sizes, (int)Arg("--updates", 50));
    Console.WriteLine($"{"group size",12} {"tree update ms",15} {"values read",12} {"depth",6} {"naive re-reduce ms",19}");
    foreach (var r in rows) Console.WriteLine($"{r.GroupSize,12:N0} {r.TreeUpdateMs,15:F2} {r.TreeReads,12:N0} {r.Depth,6} {r.NaiveMs,19:F1}");
    var growth = rows[^1].TreeUpdateMs / rows[0].TreeUpdateMs;
    Console.WriteLine($"tree update at {sizes[^1]:N0} / at {sizes[0]:N0}: {growth:F2} (target ≤ 5)");
    Console.WriteLine(JsonSerializer.Serialize(new { benchmark = "reduce-tree", rows, ratio_1m_to_1k = Math.Round(growth, 2) }));
}

async Task RunMapReduceAsync()
{
    var n = (int)Arg("--docs", 1_000_000);
    // --kafka: an ingest process relaying to a broker of its own and an indexer process (map stage → mapped topic → reduce).
    var kafka = args.Contains("--kafka");
    await using var broker = kafka ? await KafkaBroker.StartOwnedAsync() : null;
    var ingestPort = 19000 + Random.Shared.Next(500);
    using var ingest = broker is null ? null : StartMagpie(Path.Combine(run, "map-reduce-ingest"), ingestPort, "--target", "ingest", "--kafka", broker.BootstrapServers);
    using var loaded = broker is null ? await StartLoadedAsync("map-reduce", n) : await StartLoadedAsync("map-reduce", n, ingestPort, "--target", "indexer", "--kafka", broker.BootstrapServers);
    var (magpie, http) = (loaded.Process, loaded.Http);
    // Warm-up: both indexes over a small collection first (JIT, the Lucene host), then each alone over the posts.
    await MapReduceBenchmark.LoadAsync(loaded.Writes, IngestBenchmark.Batches(20_000, 512, seed: 7).Select(b => b.Select(w => w with { Id = "warmup/" + w.Id }).ToArray()).ToList());
    var timeout = TimeSpan.FromMinutes(60);
    foreach (var (name, d) in new[] { ("Warmup.Map", MapReduceBenchmark.PlainMap), ("Warmup.Reduce", MapReduceBenchmark.PerUserPerDay) })
        await MapReduceBenchmark.BuildAsync(http, name, d with { Maps = [.. d.Maps.Select(m => m.Replace("map('Posts'", "map('Warmup'"))] }, 20_000, timeout);
    var plain = await MapReduceBenchmark.BuildAsync(http, "Bench/PerUserPerDay.Map", MapReduceBenchmark.PlainMap, n, timeout);
    Console.WriteLine($"plain map: {plain.EntriesPerSecond:N0} entries/s ({plain.Elapsed.TotalSeconds:F1} s)");
    var reduce = await MapReduceBenchmark.BuildAsync(http, "Bench/PerUserPerDay", MapReduceBenchmark.PerUserPerDay, n, timeout);
    Console.WriteLine($"map/reduce: {reduce.EntriesPerSecond:N0} entries/s ({reduce.Elapsed.TotalSeconds:F1} s, {reduce.Results:N0} (user, day) results)");
    if (ingest is not null) { ingest.Kill(); ingest.WaitForExit(); }
    StopMagpie(magpie);
    var ratio = reduce.EntriesPerSecond / plain.EntriesPerSecond;
    Console.WriteLine();
    Console.WriteLine($"{"side",-46} {"map entries/s",14} {"seconds",8} {"results",10}");
    Console.WriteLine($"{"plain map index (same map, same documents)",-46} {plain.EntriesPerSecond,14:N0} {plain.Elapsed.TotalSeconds,8:F1} {plain.Results,10:N0}");
    Console.WriteLine($"{"map/reduce: posts per user per day",-46} {reduce.EntriesPerSecond,14:N0} {reduce.Elapsed.TotalSeconds,8:F1} {reduce.Results,10:N0}");
    Console.WriteLine($"ratio map/reduce to plain map: {ratio:F2}   ({n:N0} posts, {Environment.ProcessorCount} cores, {(kafka ? "Kafka mode" : "embedded")})");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "map-reduce", mode = kafka ? "kafka" : "embedded", docs = n, cores = Environment.ProcessorCount,
        map_entries_per_s = Math.Round(plain.EntriesPerSecond), map_reduce_entries_per_s = Math.Round(reduce.EntriesPerSecond),
        map_seconds = Math.Round(plain.Elapsed.TotalSeconds, 1), map_reduce_seconds = Math.Round(reduce.Elapsed.TotalSeconds, 1),
        results = reduce.Results, ratio = Math.Round(ratio, 3),
    }));
}

async Task RunFacetsAsync()
{
    var n = (int)Arg("--docs", 1_000_000);
    var runs = (int)Arg("--runs", 30);
    var perTermRuns = (int)Arg("--per-term-runs", 3);
    var warmupSeconds = Arg("--warmup-seconds", 5);   // whole seconds
    using var loaded = await StartLoadedAsync("facets", n);
    var (magpie, http) = (loaded.Process, loaded.Http);
    await IndexBenchmark.DefineAsync(http, FacetBenchmark.Name, FacetBenchmark.Definition);
    await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(30), FacetBenchmark.Name);

    var rows = new List<(string Case, double ColdMs, FacetBenchmark.Latencies Facets, FacetBenchmark.Latencies PerTerm, int Queries, FacetBenchmark.Latencies Alone)>();
    // --cases filter: the 10 % case alone (to profile it).
    foreach (var (label, filter) in new[] { ("match-all", (string?)null), ("10% filter", FacetBenchmark.Filter) }.Where(c => ArgText("--cases") is not "filter" || c.Item2 is not null))
    {
        // The first query after a refresh builds the columns (cold); then warm-up and the measured runs.
        var (cold, _) = await FacetBenchmark.FacetsAsync(http, filter, 1);
        await WarmUpAsync(() => FacetBenchmark.FacetsAsync(http, filter, 1), warmupSeconds);
        var (facets, answer) = await FacetBenchmark.FacetsAsync(http, filter, runs);
        Console.WriteLine($"{label}: facets p50 {facets.P50:F1} ms; per-term rounds…");
        await FacetBenchmark.PerTermAsync(http, filter, answer, 1);   // warm-up, and checks that both sides count the same
        var perTerm = await FacetBenchmark.PerTermAsync(http, filter, answer, perTermRuns);
        var queries = answer[0].GetProperty("values").GetArrayLength() + answer[1].GetProperty("values").GetArrayLength() + FacetBenchmark.Ranges.Length;
        await WarmUpAsync(() => FacetBenchmark.QueryAloneAsync(http, filter, 1), warmupSeconds);
        var alone = await FacetBenchmark.QueryAloneAsync(http, filter, runs);
        rows.Add((label, cold.Ms[0], facets, perTerm, queries, alone));
    }
    var cache = (await http.GetFromJsonAsync<JsonElement>($"indexes/{FacetBenchmark.Name}/stats")).GetProperty("facetCache");
    StopMagpie(magpie);

    Console.WriteLine();
    Console.WriteLine($"{"case",-12} {"cold ms",8} {"facets p50",11} {"p99",8} {"query alone p50",16} {"per-term p50",13} {"queries",8} {"ratio",7}");
    foreach (var r in rows)
        Console.WriteLine($"{r.Case,-12} {r.ColdMs,8:F1} {r.Facets.P50,11:F1} {r.Facets.P99,8:F1} {r.Alone.P50,16:F1} {r.PerTerm.P50,13:F0} {r.Queries,8} {r.PerTerm.P50 / r.Facets.P50,7:F0}x");
    if (rows.Count == 2) Console.WriteLine($"10 % filter / match-all, facets p50: {rows[1].Facets.P50 / rows[0].Facets.P50:F2}");
    Console.WriteLine($"facet columns kept: {cache.GetProperty("bytes").GetInt64() / 1048576.0:F1} MB in {cache.GetProperty("columns").GetInt64()} columns ({n:N0} posts, {Environment.ProcessorCount} cores)");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "facets", docs = n, cores = Environment.ProcessorCount, runs, per_term_runs = perTermRuns,
        cases = rows.Select(r => new
        {
            @case = r.Case, cold_ms = Math.Round(r.ColdMs, 1), facets_p50_ms = Math.Round(r.Facets.P50, 1), facets_p99_ms = Math.Round(r.Facets.P99, 1),
            per_term_p50_ms = Math.Round(r.PerTerm.P50), per_term_queries = r.Queries, ratio = Math.Round(r.PerTerm.P50 / r.Facets.P50, 1),
            query_alone_p50_ms = Math.Round(r.Alone.P50, 1),
        }),
        cache_bytes = cache.GetProperty("bytes").GetInt64(),
    }));
}

async Task RunSubscriptionsAsync()
{
    var n = (int)Arg("--docs", 200_000);
    using var loaded = await StartLoadedAsync("subscriptions", n);
    var (magpie, http) = (loaded.Process, loaded.Http);
    await SubscriptionBenchmark.RunAsync(http, "warmup", "from Posts", 1024, Math.Min(n, 20_000));
    var sides = new List<SubscriptionBenchmark.Side>();
    foreach (var batch in new[] { 100, 1024 })
    {
        var side = await SubscriptionBenchmark.RunAsync(http, $"all-{batch}", "from Posts", batch, n);
        Console.WriteLine($"batches of {batch}: {side.DocsPerSecond:N0} docs/s");
        sides.Add(side);
    }
    StopMagpie(magpie);
    Console.WriteLine();
    Console.WriteLine($"{"subscription",-14} {"batch",6} {"documents",10} {"seconds",8} {"docs/s",10}");
    foreach (var s in sides) Console.WriteLine($"{s.Name,-14} {s.BatchSize,6} {s.Documents,10:N0} {s.Elapsed.TotalSeconds,8:F1} {s.DocsPerSecond,10:N0}");
    Console.WriteLine($"({n:N0} posts of ~1.1 KB, the worker acks each batch at once, {Environment.ProcessorCount} cores)");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "subscriptions", docs = n, cores = Environment.ProcessorCount,
        sides = sides.Select(s => new { batch = s.BatchSize, documents = s.Documents, seconds = Math.Round(s.Elapsed.TotalSeconds, 1), docs_per_s = Math.Round(s.DocsPerSecond) }),
    }));
}

async Task RunPgAsync()
{
    var n = (int)Arg("--docs", 1_000_000);
    var runs = (int)Arg("--runs", 30);
    var warmupSeconds = Arg("--warmup-seconds", 5);   // whole seconds
    var pgPort = FreePort.Next();
    using var loaded = await StartLoadedAsync("pg", n, null, "--pg-port", pgPort.ToString(CultureInfo.InvariantCulture));
    var (magpie, http) = (loaded.Process, loaded.Http);
    await IndexBenchmark.DefineAsync(http, PgBenchmark.Name, PgBenchmark.Definition);
    await IndexBenchmark.DefineAsync(http, PgBenchmark.StoredName, PgBenchmark.StoredDefinition);
    await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(30), PgBenchmark.Name);
    await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(30), PgBenchmark.StoredName);
    var connection = $"Host=127.0.0.1;Port={pgPort};Username=bench;Database=magpie;Pooling=false;Server Compatibility Mode=NoTypeLoading;Command Timeout=600";
    await WarmUpAsync(() => PgBenchmark.TimeGroupedAsync(connection, 1), warmupSeconds);   // JIT, facet columns
    Console.WriteLine($"time-grouped aggregate, {runs} runs…");
    var grouped = await PgBenchmark.TimeGroupedAsync(connection, runs);
    await WarmUpAsync(() => PgBenchmark.LatencyAsync(connection, PgBenchmark.MultiSeries, 1), warmupSeconds);
    var series = await PgBenchmark.LatencyAsync(connection, PgBenchmark.MultiSeries, runs);
    await WarmUpAsync(() => PgBenchmark.LatencyAsync(connection, PgBenchmark.Distinct, 1), warmupSeconds);
    var distinct = await PgBenchmark.LatencyAsync(connection, PgBenchmark.Distinct, runs);
    await PgBenchmark.StreamAsync(connection);            // warm-up
    var streamed = await PgBenchmark.StreamAsync(connection);
    await PgBenchmark.StreamAsync(connection, PgBenchmark.StoredName);
    var stored = await PgBenchmark.StreamAsync(connection, PgBenchmark.StoredName);
    StopMagpie(magpie);
    if (distinct.Rows != 8) throw new InvalidOperationException($"expected 8 hosts, SELECT DISTINCT gave {distinct.Rows}");
    if (grouped.Posts != n || streamed.Rows != n || stored.Rows != n)
        throw new InvalidOperationException($"expected {n} posts, the aggregate counted {grouped.Posts}, the streams gave {streamed.Rows} and {stored.Rows}");
    var storedRate = stored.Rows / stored.Elapsed.TotalSeconds;
    double P(double q) => IndexBenchmark.Percentile(grouped.Ms, q);
    Console.WriteLine();
    Console.WriteLine($"streamed SELECT of {streamed.Rows:N0} rows, documents read: {streamed.Rows / streamed.Elapsed.TotalSeconds:N0} rows/s ({streamed.Elapsed.TotalSeconds:F1} s)");
    Console.WriteLine($"streamed SELECT of {stored.Rows:N0} rows, stored fields: {storedRate:N0} rows/s ({stored.Elapsed.TotalSeconds:F1} s), {storedRate / (streamed.Rows / streamed.Elapsed.TotalSeconds):F2}x");
    Console.WriteLine($"time-grouped aggregate ({grouped.Buckets} buckets over {grouped.Posts:N0} posts): p50 {P(0.5):F1} ms, p99 {P(0.99):F1} ms ({runs} runs, {Environment.ProcessorCount} cores)");
    Console.WriteLine($"multi-series panel ({series.Rows} rows): p50 {IndexBenchmark.Percentile(series.Ms, 0.5):F1} ms, p99 {IndexBenchmark.Percentile(series.Ms, 0.99):F1} ms");
    Console.WriteLine($"SELECT DISTINCT variable ({distinct.Rows} rows): p50 {IndexBenchmark.Percentile(distinct.Ms, 0.5):F1} ms, p99 {IndexBenchmark.Percentile(distinct.Ms, 0.99):F1} ms");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "pg", docs = n, cores = Environment.ProcessorCount, runs,
        stream_rows_per_s = Math.Round(streamed.Rows / streamed.Elapsed.TotalSeconds), stream_seconds = Math.Round(streamed.Elapsed.TotalSeconds, 1),
        stored_stream_rows_per_s = Math.Round(storedRate), stored_ratio = Math.Round(storedRate / (streamed.Rows / streamed.Elapsed.TotalSeconds), 2),
        grouped_p50_ms = Math.Round(P(0.5), 1), grouped_p99_ms = Math.Round(P(0.99), 1), buckets = grouped.Buckets,
        series_p50_ms = Math.Round(IndexBenchmark.Percentile(series.Ms, 0.5), 1), series_rows = series.Rows,
        distinct_p50_ms = Math.Round(IndexBenchmark.Percentile(distinct.Ms, 0.5), 1), distinct_rows = distinct.Rows,
    }));
}

async Task RunLoadDocumentAsync()
{
    var n = (int)Arg("--docs", 1_000_000);
    using var loaded = await StartLoadedAsync("load-document", n);
    var (magpie, http) = (loaded.Process, loaded.Http);
    await IngestBenchmark.HttpBulkAsync(loaded.Writes, LoadDocumentBenchmark.Users(), 4);
    var plain = await LoadDocumentBenchmark.IndexAsync(http, LoadDocumentBenchmark.Plain, LoadDocumentBenchmark.PlainDefinition, n);
    var loading = await LoadDocumentBenchmark.IndexAsync(http, LoadDocumentBenchmark.Loading, LoadDocumentBenchmark.LoadingDefinition, n);
    var rename = await LoadDocumentBenchmark.RenameAsync(http);
    StopMagpie(magpie);
    var ratio = plain.TotalSeconds / loading.TotalSeconds;
    Console.WriteLine();
    Console.WriteLine($"indexing {n:N0} posts, the map alone: {n / plain.TotalSeconds:N0} docs/s ({plain.TotalSeconds:F1} s)");
    Console.WriteLine($"indexing {n:N0} posts, loading each owner: {n / loading.TotalSeconds:N0} docs/s ({loading.TotalSeconds:F1} s), {ratio:F2} of the map alone");
    Console.WriteLine($"renaming the owner of {rename.Posts:N0} posts: every one answers the new name after {rename.Elapsed.TotalSeconds:F2} s");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "load-document", docs = n, cores = Environment.ProcessorCount,
        plain_docs_per_s = Math.Round(n / plain.TotalSeconds), loading_docs_per_s = Math.Round(n / loading.TotalSeconds), ratio = Math.Round(ratio, 2),
        renamed_posts = rename.Posts, rename_seconds = Math.Round(rename.Elapsed.TotalSeconds, 2),
    }));
}

async Task RunPatchByQueryAsync()
{
    var n = (int)Arg("--docs", 1_000_000);
    var posts = IngestBenchmark.Batches(n, 512, seed: 42);
    var bumped = IngestBenchmark.Serialize(PatchByQueryBenchmark.Bumped(posts));
    using var loaded = await StartLoadedAsync("patch-by-query", n);
    var (magpie, http) = (loaded.Process, loaded.Http);
    // The automatic index the operation's query runs on, built before either side is timed.
    (await http.PostAsJsonAsync("queries", new { query = "from Posts", pageSize = 0, waitForNonStaleResults = true, timeoutMs = 300_000 })).EnsureSuccessStatusCode();
    var operation = await PatchByQueryBenchmark.OperationAsync(http);
    var bulk = await IngestBenchmark.HttpBulkAsync(loaded.Writes, bumped, 8);
    StopMagpie(magpie);
    if (operation.Written != n) throw new InvalidOperationException($"the operation wrote {operation.Written} of {n}");
    var rate = n / operation.Elapsed.TotalSeconds;
    Console.WriteLine();
    Console.WriteLine($"update by query over {n:N0} posts: {rate:N0} docs/s ({operation.Elapsed.TotalSeconds:F1} s)");
    Console.WriteLine($"POST /bulk_docs of the same changes (8 clients): {bulk.DocsPerSecond:N0} docs/s; the operation runs at {rate / bulk.DocsPerSecond:F2} of it");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "patch-by-query", docs = n, cores = Environment.ProcessorCount,
        operation_docs_per_s = Math.Round(rate), bulk_docs_per_s = Math.Round(bulk.DocsPerSecond), ratio = Math.Round(rate / bulk.DocsPerSecond, 2),
    }));
}

async Task RunEmbeddingsAsync()
{
    var n = (int)Arg("--docs", 20_000);
    var (titles, bodies) = EmbeddingBenchmark.Sample(FindRoot());
    var titleRate = await EmbeddingBenchmark.ThroughputAsync(titles);
    var bodyRate = await EmbeddingBenchmark.ThroughputAsync(bodies);
    Console.WriteLine($"built-in model, in this process: titles {titleRate.PerCpuSecond:N0} per CPU-second ({titleRate.PerSecond:N0}/s), bodies {bodyRate.PerCpuSecond:N1} per CPU-second ({bodyRate.PerSecond:N1}/s)");
    using var loaded = await StartLoadedAsync("embeddings", n);
    var plain = await VectorBenchmark.IndexAsync(loaded.Http, EmbeddingBenchmark.Plain, EmbeddingBenchmark.PlainDefinition, n);
    var embedded = await VectorBenchmark.IndexAsync(loaded.Http, EmbeddingBenchmark.Embedded, EmbeddingBenchmark.EmbeddedDefinition, n);
    var rebuilt = await EmbeddingBenchmark.RebuildAsync(loaded.Http, EmbeddingBenchmark.Embedded, n);
    StopMagpie(loaded.Process);
    Console.WriteLine($"indexing {n:N0} posts: map of Title {n / plain.TotalSeconds:N0} docs/s, with embedding.text(Title) {n / embedded.TotalSeconds:N0} docs/s ({plain.TotalSeconds / embedded.TotalSeconds:F3}), rebuilt after a reset (vectors from the cache) {n / rebuilt.TotalSeconds:N0} docs/s");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "embeddings", docs = n, cores = Environment.ProcessorCount,
        titles_per_cpu_s = Math.Round(titleRate.PerCpuSecond), bodies_per_cpu_s = Math.Round(bodyRate.PerCpuSecond, 1),
        index_docs_per_s_plain = Math.Round(n / plain.TotalSeconds), index_docs_per_s_embedded = Math.Round(n / embedded.TotalSeconds),
        index_docs_per_s_rebuilt_from_cache = Math.Round(n / rebuilt.TotalSeconds),
    }));
}

async Task RunVectorsAsync()
{
    var n = (int)Arg("--docs", 1_000_000);
    var seconds = TimeSpan.FromSeconds(Arg("--seconds", 20));
    // The vectors are searched from memory, held under the facet cache's budget: sized for them (float32 and int8 copies).
    Environment.SetEnvironmentVariable("BENCH_MAGPIE_ENV", $"MAGPIE__FACETCACHEMEGABYTES={Arg("--cache-mb", 8192)}");
    using var loaded = await StartLoadedAsync("vectors", 0);
    var (magpie, http) = (loaded.Process, loaded.Http);
    Console.WriteLine($"writing {n:N0} vectors of {VectorBenchmark.Dimensions} dimensions…");
    var write = await IngestBenchmark.HttpBulkAsync(loaded.Writes, VectorBenchmark.Documents(n), 4);
    var exactBuild = await VectorBenchmark.IndexAsync(http, VectorBenchmark.Exact, VectorBenchmark.ExactDefinition, n);
    var int8Build = await VectorBenchmark.IndexAsync(http, VectorBenchmark.Int8, VectorBenchmark.Int8Definition, n);
    var binaryBuild = await VectorBenchmark.IndexAsync(http, VectorBenchmark.Binary, VectorBenchmark.BinaryDefinition, n);
    Console.WriteLine($"written at {write.DocsPerSecond:N0} docs/s; indexed in {exactBuild.TotalSeconds:F1} s (float32), {int8Build.TotalSeconds:F1} s (int8), {binaryBuild.TotalSeconds:F1} s (binary)");
    magpie.Refresh();
    var rssBefore = magpie.WorkingSet64;
    var raw = new VectorBenchmark.Raw(n);
    // Exactness first: Magpie's top 20 equal the raw loop's, unfiltered and filtered; then int8's recall against them.
    var recalls = new List<double>();
    var binaryRecalls = new List<double>();
    var exactMatches = 0;
    for (var q = 0; q < 20; q++)
    {
        var query = VectorBenchmark.Query(q);
        foreach (var filtered in new[] { false, true })
        {
            var truth = raw.Top(query, 20, filtered).Select(i => $"vectors/{i}").ToList();
            if ((await VectorBenchmark.AskAsync(http, VectorBenchmark.Exact, query, filtered)).SequenceEqual(truth)) exactMatches++;
            if (filtered) continue;
            recalls.Add((await VectorBenchmark.AskAsync(http, VectorBenchmark.Int8, query, false)).Count(truth.Contains) / 20.0);
            binaryRecalls.Add((await VectorBenchmark.AskAsync(http, VectorBenchmark.Binary, query, false)).Count(truth.Contains) / 20.0);
        }
    }
    magpie.Refresh();
    var rssWarm = magpie.WorkingSet64;
    // The nearest-neighbour graphs (HNSW) of the float32 index: built in the background once searches ask, then recall@10 against the loop.
    var graphs = await VectorBenchmark.GraphsBuiltAsync(http, VectorBenchmark.Exact, Path.Combine(run, "vectors"));
    Console.WriteLine($"graphs built in {graphs.Took.TotalSeconds:F0} s: {graphs.Graphs} segments' graphs of {graphs.Vectors:N0} vectors, {graphs.Bytes / 1048576.0:N0} MB on disk (mapped)");
    var graphRecalls = new Dictionary<bool, List<double>> { [false] = [], [true] = [] };
    for (var q = 0; q < 100; q++)
        foreach (var filtered in new[] { false, true })
        {
            var truth = raw.Top(VectorBenchmark.Query(q), 10, filtered).Select(i => $"vectors/{i}").ToList();
            graphRecalls[filtered].Add((await VectorBenchmark.AskAsync(http, VectorBenchmark.Exact, VectorBenchmark.Query(q), filtered, exact: false, k: 10)).Count(truth.Contains) / 10.0);
        }
    magpie.Refresh();
    var rssGraphs = magpie.WorkingSet64;
    var rows = new List<(string Side, bool Filtered, int Clients, List<double> Ms)>();
    foreach (var filtered in new[] { false, true })
        foreach (var clients in new[] { 1, 16 })
        {
            rows.Add(("magpie hnsw", filtered, clients, await VectorBenchmark.LatencyAsync(http, VectorBenchmark.Exact, filtered, clients, seconds, exact: false)));
            rows.Add(("magpie exact", filtered, clients, await VectorBenchmark.LatencyAsync(http, VectorBenchmark.Exact, filtered, clients, seconds)));
            rows.Add(("magpie int8", filtered, clients, await VectorBenchmark.LatencyAsync(http, VectorBenchmark.Int8, filtered, clients, seconds)));
            rows.Add(("magpie binary", filtered, clients, await VectorBenchmark.LatencyAsync(http, VectorBenchmark.Binary, filtered, clients, seconds)));
            rows.Add(("raw TensorPrimitives", filtered, clients, await VectorBenchmark.RawLatencyAsync(raw, filtered, clients, seconds)));
        }
    var stats = await http.GetFromJsonAsync<JsonElement>($"indexes/{VectorBenchmark.Exact}");
    StopMagpie(magpie);
    double P50(string side, bool f, int c) => IndexBenchmark.Percentile(rows.First(r => r.Side == side && r.Filtered == f && r.Clients == c).Ms, 0.5);
    Console.WriteLine();
    Console.WriteLine($"{"side",-22} {"filter",7} {"clients",8} {"p50 ms",8} {"p99 ms",8} {"q/s",8}");
    foreach (var r in rows)
        Console.WriteLine($"{r.Side,-22} {(r.Filtered ? "10 %" : "none"),7} {r.Clients,8} {IndexBenchmark.Percentile(r.Ms, 0.5),8:F1} {IndexBenchmark.Percentile(r.Ms, 0.99),8:F1} {r.Ms.Count / seconds.TotalSeconds,8:F1}");
    Console.WriteLine($"exact top-20 equal to the raw loop's: {exactMatches} of 40 queries; int8 recall@20 {recalls.Average():F3}");
    Console.WriteLine($"ratio raw p50 / magpie exact p50 (1 client): unfiltered {P50("raw TensorPrimitives", false, 1) / P50("magpie exact", false, 1):F2}, filtered {P50("raw TensorPrimitives", true, 1) / P50("magpie exact", true, 1):F2}");
    Console.WriteLine($"int8 speed-up (p50, 1 client, unfiltered): {P50("magpie exact", false, 1) / P50("magpie int8", false, 1):F2}×");
    Console.WriteLine($"binary recall@20 {binaryRecalls.Average():F3} (RavenDB's score: 1 − differing bits / bits), p50 {P50("magpie binary", false, 1):F1} ms ({P50("magpie exact", false, 1) / P50("magpie binary", false, 1):F2}× exact)");
    Console.WriteLine($"hnsw recall@10 against the loop: unfiltered {graphRecalls[false].Average():F3}, filtered {graphRecalls[true].Average():F3}; p50 {P50("magpie hnsw", false, 1):F2} ms vs exact {P50("magpie exact", false, 1):F1} ms; RSS with graphs mapped {rssGraphs / 1048576:N0} MB");
    Console.WriteLine($"magpie RSS {rssBefore / 1048576:N0} MB before searching, {rssWarm / 1048576:N0} MB with both vector copies held; raw array {raw.Bytes / 1048576:N0} MB");
    Console.WriteLine($"facet cache of the exact index: {(stats.TryGetProperty("status", out var status) && status.TryGetProperty("facetCache", out var cache) ? cache.ToString() : "(not reported)")}");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "vectors", docs = n, dimensions = VectorBenchmark.Dimensions, cores = Environment.ProcessorCount, exact_matches_of_40 = exactMatches,
        int8_recall_at_20 = Math.Round(recalls.Average(), 3), binary_recall_at_20 = Math.Round(binaryRecalls.Average(), 3), hnsw_recall_at_10 = Math.Round(graphRecalls[false].Average(), 3),
        hnsw_recall_at_10_filtered = Math.Round(graphRecalls[true].Average(), 3), graphs_build_s = Math.Round(graphs.Took.TotalSeconds), graphs_vectors = graphs.Vectors, graphs_mb = graphs.Bytes / 1048576,
        rss_graphs_mb = rssGraphs / 1048576, rss_before_mb = rssBefore / 1048576, rss_warm_mb = rssWarm / 1048576,
        rows = rows.Select(r => new { side = r.Side, filtered = r.Filtered, clients = r.Clients, p50_ms = Math.Round(IndexBenchmark.Percentile(r.Ms, 0.5), 1), p99_ms = Math.Round(IndexBenchmark.Percentile(r.Ms, 0.99), 1) }),
    }));
}

async Task RunHighlightAsync()
{
    var n = (int)Arg("--docs", 200_000);
    var seconds = TimeSpan.FromSeconds(Arg("--seconds", 20));
    using var loaded = await StartLoadedAsync("highlight", n);
    var http = loaded.Http;
    const string Plain = "from Posts where search(Body, 'kafka lucene') order by score() desc";
    (await http.PostAsJsonAsync("queries", new { query = Plain, pageSize = 0, waitForNonStaleResults = true, timeoutMs = 600_000 })).EnsureSuccessStatusCode();
    var rows = new List<(string Side, int Clients, List<double> Ms)>();
    foreach (var clients in new[] { 1, 16 })
    {
        rows.Add(("page of 25", clients, await IndexBenchmark.LatencyAsync(http, Plain, clients, seconds)));
        rows.Add(("with highlight(Body, 128, 2)", clients, await IndexBenchmark.LatencyAsync(http, Plain + " include highlight(Body, 128, 2)", clients, seconds)));
    }
    StopMagpie(loaded.Process);
    Console.WriteLine();
    foreach (var r in rows)
        Console.WriteLine($"{r.Side,-30} {r.Clients,3} clients  p50 {IndexBenchmark.Percentile(r.Ms, 0.5),7:F1} ms  p99 {IndexBenchmark.Percentile(r.Ms, 0.99),7:F1} ms");
    double P50(int i) => IndexBenchmark.Percentile(rows[i].Ms, 0.5);
    Console.WriteLine($"highlighted / plain p50: {P50(1) / P50(0):F2} (1 client), {P50(3) / P50(2):F2} (16 clients)");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "highlight", docs = n, cores = Environment.ProcessorCount,
        rows = rows.Select(r => new { side = r.Side, clients = r.Clients, p50_ms = Math.Round(IndexBenchmark.Percentile(r.Ms, 0.5), 1), p99_ms = Math.Round(IndexBenchmark.Percentile(r.Ms, 0.99), 1) }),
        ratio_1 = Math.Round(P50(1) / P50(0), 2), ratio_16 = Math.Round(P50(3) / P50(2), 2),
    }));
}

async Task RunStudioAsync()
{
    var n = (int)Arg("--docs", 20_000);
    await using var rabbit = await RabbitMqBroker.StartAsync();
    using var loaded = await StartLoadedAsync("studio", n);
    await StudioBenchmark.DefineAsync(loaded.Http, rabbit.Url);
    (await loaded.Http.PostAsJsonAsync("queries", new { query = "from index 'Studio/Bench19'", pageSize = 0, waitForNonStaleResults = true, timeoutMs = 600_000 })).EnsureSuccessStatusCode();
    var (playwright, browser) = await Magpie.Tests.Fixtures.Chromium.LaunchAsync();
    var (cold, first, refreshes) = await StudioBenchmark.OverviewAsync(browser, loaded.Http.BaseAddress!, 10);
    var rendered = await StudioBenchmark.QueryRenderAsync(browser, loaded.Http.BaseAddress!, 20);
    await browser.DisposeAsync();
    playwright.Dispose();
    StopMagpie(loaded.Process);
    Console.WriteLine();
    Console.WriteLine($"overview (20 indexes, 5 ETL tasks, {n:N0} posts): server time of the first load {first:F1} ms ({cold:F1} ms the first time the server answers those calls); refreshes p50 {IndexBenchmark.Percentile(refreshes, 0.5):F1} ms, max {refreshes.Max():F1} ms");
    Console.WriteLine($"a query page of 25 drawn after the API answered: p50 {IndexBenchmark.Percentile(rendered, 0.5):F1} ms, max {rendered.Max():F1} ms");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "studio", docs = n, cold_load_server_ms = Math.Round(cold, 1), first_load_server_ms = Math.Round(first, 1), refresh_server_p50_ms = Math.Round(IndexBenchmark.Percentile(refreshes, 0.5), 1),
        refresh_server_max_ms = Math.Round(refreshes.Max(), 1), render_p50_ms = Math.Round(IndexBenchmark.Percentile(rendered, 0.5), 1), render_max_ms = Math.Round(rendered.Max(), 1),
    }));
}

long Arg(string name, long fallback) => ArgText(name) is { } v ? long.Parse(v, CultureInfo.InvariantCulture) : fallback;
string? ArgText(string name) => Array.IndexOf(args, name) is var i and >= 0 && i + 1 < args.Length ? args[i + 1] : null;

/// <summary>A magpie process of its own (embedded) holding <paramref name="n"/> synthetic posts (seed 42), and a client for it.</summary>
async Task<LoadedMagpie> StartLoadedAsync(string name, int n, int? writesPort = null, params string[] extra)
{
    var port = 18000 + Random.Shared.Next(1000);
    var magpie = StartMagpie(Path.Combine(run, name), port, extra);
    await WaitHealthy(port);
    var http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{port}/"), Timeout = TimeSpan.FromMinutes(5) };
    // Kafka mode: documents go to the ingest process on writesPort, indexes live on this one.
    var writesUri = writesPort is { } w ? new Uri($"http://127.0.0.1:{w}/") : http.BaseAddress;
    if (writesPort is { } ready) await WaitHealthy(ready);
    Console.WriteLine($"loading {n:N0} synthetic posts…");
    await MapReduceBenchmark.LoadAsync(writesUri, IngestBenchmark.Batches(n, 512, seed: 42));
    return new LoadedMagpie(magpie, http, writesUri);
}

async Task RunFaultsAsync()
{
    var rounds = (int)Arg("--rounds", 12);
    var outage = TimeSpan.FromSeconds(Arg("--outage-seconds", 60));
    var kafka = args.Contains("--kafka");
    await using var suite = await Magpie.Tests.Faults.FaultSuite.StartAsync(Console.WriteLine, kafka);
    var faults = kafka ? Magpie.Tests.Faults.FaultSuite.KafkaFaults : Magpie.Tests.Faults.FaultSuite.EmbeddedFaults;
    var results = new List<Magpie.Tests.Faults.FaultSuite.Round>();
    for (var i = 0; i < rounds; i++) results.Add(await suite.RunRoundAsync(i + 1, faults[i % faults.Length], outage));
    Console.WriteLine();
    Console.WriteLine(Magpie.Tests.Faults.FaultSuite.Table(results));
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "faults", mode = kafka ? "kafka" : "embedded", rounds, outage_s = outage.TotalSeconds, writes_acknowledged = results[^1].WritesAcknowledged,
        lost = results.Sum(r => r.Lost), index_mismatches = results.Sum(r => r.IndexMismatches), reduce_mismatches = results.Sum(r => r.ReduceMismatches), missing_rabbitmq = results.Sum(r => r.MissingInRabbitMq),
        missing_subscription = results.Sum(r => r.MissingInSubscription), duplicates_rabbitmq = results[^1].DuplicatesRabbitMq,
        duplicates_subscription = results[^1].DuplicatesSubscription, max_recovery_s = Math.Round(results.Max(r => r.RecoverySeconds), 2),
    }));
}

// Disk used after updating every document N times, with and without change-log compaction, and ingest meanwhile.
async Task RunCompactionAsync()
{
    var n = (int)Arg("--docs", 200_000);
    var rounds = (int)Arg("--rounds", 10);
    Console.WriteLine($"{n:N0} synthetic posts, then {rounds} rounds updating every one; compaction off, then on");
    var sides = new List<CompactionBenchmark.Side>();
    foreach (var on in new[] { false, true })
        sides.Add(await CompactionBenchmark.RunAsync(on ? "compaction on" : "compaction off", on, (dir, port) => StartMagpie(dir, port), WaitHealthy,
            Path.Combine(run, on ? "compaction-on" : "compaction-off"), n, rounds));
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }
    Console.WriteLine();
    Console.WriteLine($"{"side",-16} {"store MB",9} {"load docs/s",12} {"update docs/s (mean)",21} {"update min",11} {"passes",7}");
    foreach (var s in sides)
        Console.WriteLine($"{s.Name,-16} {CompactionBenchmark.Megabytes(s.DiskBytes),9:N0} {s.RoundDocsPerSecond[0],12:N0} {s.RoundDocsPerSecond.Skip(1).Average(),21:N0} {s.RoundDocsPerSecond.Skip(1).Min(),11:N0} {s.Passes,7}");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "compaction", docs = n, rounds, cores = Environment.ProcessorCount,
        sides = sides.Select(s => new
        {
            name = s.Name, store_mb = Math.Round(CompactionBenchmark.Megabytes(s.DiskBytes)), log_mb = Math.Round(CompactionBenchmark.Megabytes(s.LogBytes)),
            rounds_docs_per_s = s.RoundDocsPerSecond.Select(r => Math.Round(r)), passes = s.Passes, settle_s = Math.Round(s.SettleSeconds, 1),
        }),
    }));
}

async Task RunOverloadAsync()
{
    var connections = (int)Arg("--connections", 2000);
    var seconds = Arg("--seconds", 60);
    var n = (int)Arg("--docs", 20_000);
    var writeShare = double.Parse(ArgText("--write-share") ?? "0.5", CultureInfo.InvariantCulture);
    var queryShare = double.Parse(ArgText("--query-share") ?? "0", CultureInfo.InvariantCulture);
    var pgPort = FreePort.Next();
    using var loaded = await StartLoadedAsync("overload", 0, null, "--pg-port", pgPort.ToString(CultureInfo.InvariantCulture));
    var load = new Uri(loaded.Http.BaseAddress!, "");
    Console.WriteLine($"writing {n:N0} documents, then {connections:N0} connections of reads, writes ({writeShare:P0}) and queries ({queryShare:P0}) for {seconds} s…");
    await MapReduceBenchmark.LoadAsync(load, IngestBenchmark.Batches(n, 512, seed: 42).Select(b => b.Select(w => w with { Id = "load/" + w.Id.Split('/')[^1] }).ToArray()).ToList());
    // The index the queries ask (and the slow streams read); defined before the load when queries are part of it.
    async Task<HttpResponseMessage> DefineIndexAsync()
    {
        var collection = (await loaded.Http.GetFromJsonAsync<JsonElement>("stats")).GetProperty("collections").EnumerateObject().MaxBy(c => c.Value.GetInt64()).Name;
        await IndexBenchmark.DefineAsync(loaded.Http, OverloadBenchmark.QueryIndex, new Magpie.Contracts.Indexes.IndexDefinition
        {
            Maps = [$"map('{collection}', p => ({{ Title: p.Title, Score: p.Score }}))"],
        });
        return await loaded.Http.PostAsJsonAsync("queries", new { query = $"from index '{OverloadBenchmark.QueryIndex}'", pageSize = 1, waitForNonStaleResults = true, timeoutMs = 600_000 });
    }
    var all = queryShare > 0 ? await DefineIndexAsync() : null;
    var r = await OverloadBenchmark.RunAsync(load, loaded.Process.Id, connections, TimeSpan.FromSeconds(seconds), n, writeShare,
        TimeSpan.FromMilliseconds(Arg("--shed-pause-ms", 0)), queryShare);
    // Slow stream readers over an index of those documents, then idle PostgreSQL connections.
    all ??= await DefineIndexAsync();
    Console.WriteLine($"index over {(await all.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("totalResults").GetInt64():N0} documents; streaming it…");
    var streams = await OverloadBenchmark.SlowStreamsAsync(load, loaded.Process.Id, "from index 'Overload/Posts'", (int)Arg("--streams", 50), 1024,
        TimeSpan.FromSeconds(Arg("--stream-seconds", 30)));
    var idle = await OverloadBenchmark.IdlePgAsync(pgPort, (int)Arg("--pg-connections", 500));
    StopMagpie(loaded.Process);
    var total = r.Admitted + r.Shed + r.TimedOut + r.Failed + r.OtherStatus;
    Console.WriteLine();
    Console.WriteLine($"{"connections",12} {"requests",10} {"admitted",10} {"shed 503",10} {"timed out",10} {"failed",8} {"adm p50",8} {"adm p99",8} {"adm max",8} {"503 p99",8} {"peak RSS",9} {"recovery",9}");
    Console.WriteLine($"{r.Connections,12:N0} {total,10:N0} {r.Admitted,10:N0} {r.Shed,10:N0} {r.TimedOut,10:N0} {r.Failed,8:N0} {r.AdmittedP50,6:F0}ms {r.AdmittedP99,6:F0}ms {r.AdmittedMax,6:F0}ms {r.ShedP99,6:F0}ms {r.PeakRssMb,6:N0} MB {r.RecoverySeconds,7:F2} s");
    Console.WriteLine($"admitted/s {r.Admitted / r.Seconds:N0}; every 503 had Retry-After: {r.ShedHadRetryAfter}; {Environment.ProcessorCount} cores");
    if (queryShare > 0) Console.WriteLine($"queries admitted {r.AdmittedQueries:N0} ({r.AdmittedQueries / r.Seconds:N0}/s): p50 {r.QueryP50:F0} ms, p99 {r.QueryP99:F0} ms");
    Console.WriteLine($"{streams.Streams} streams read at 1 KB/s for {streams.Seconds:F0} s ({streams.BytesRead / 1024:N0} KB read): server RSS {streams.RssStartMb} MB before, {streams.RssOpenMb} MB with the streams open (5 s), {streams.RssMaxMb} MB at most, {streams.RssEndMb} MB at the end");
    Console.WriteLine($"{idle.Tried} idle PostgreSQL connections: {idle.Accepted} served, {idle.Refused} refused ({idle.RefusedWith}), {idle.OtherErrors} other errors; a new one after they closed: {(idle.NewConnectionAfterClose ? "served" : "NOT served")}");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "overload", connections = r.Connections, seconds = Math.Round(r.Seconds, 1), write_share = writeShare, query_share = queryShare, requests = total,
        queries_admitted = r.AdmittedQueries, query_p50_ms = Math.Round(r.QueryP50, 1), query_p99_ms = Math.Round(r.QueryP99, 1),
        admitted = r.Admitted, shed = r.Shed, timed_out = r.TimedOut, failed = r.Failed, other_status = r.OtherStatus,
        admitted_per_s = Math.Round(r.Admitted / r.Seconds), admitted_p50_ms = Math.Round(r.AdmittedP50, 1), admitted_p99_ms = Math.Round(r.AdmittedP99, 1),
        admitted_max_ms = Math.Round(r.AdmittedMax, 1), shed_p99_ms = Math.Round(r.ShedP99, 1), retry_after_on_every_503 = r.ShedHadRetryAfter,
        peak_rss_mb = r.PeakRssMb, recovery_s = Math.Round(r.RecoverySeconds, 2), cores = Environment.ProcessorCount,
        slow_streams = streams.Streams, slow_stream_kb_read = streams.BytesRead / 1024, stream_rss_start_mb = streams.RssStartMb, stream_rss_open_mb = streams.RssOpenMb, stream_rss_max_mb = streams.RssMaxMb,
        stream_rss_end_mb = streams.RssEndMb, idle_pg_tried = idle.Tried, idle_pg_served = idle.Accepted, idle_pg_refused_53300 = idle.Refused,
        idle_pg_other_errors = idle.OtherErrors, idle_pg_new_after_close = idle.NewConnectionAfterClose,
    }));
}

void StopMagpie(Process magpie)
{
    magpie.Kill();
    magpie.WaitForExit();
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }
}

async Task RunIngestNodesAsync()
{
    var counts = (ArgText("--nodes") ?? "1,2,3").Split(',').Select(int.Parse).ToList();
    var n = Arg("--docs", 200_000);
    var takeoverDocs = Arg("--takeover-docs", 1_000_000);
    var outcomes = new List<PartitionedIngestBenchmark.Outcome>();
    foreach (var nodes in counts.Append(-1))
    {
        // The last round: three nodes loaded with --takeover-docs, then one killed.
        var takeover = nodes == -1;
        var size = takeover ? takeoverDocs : n;
        var count = takeover ? 3 : nodes;
        await using var broker = await KafkaBroker.StartOwnedAsync();
        var ports = Enumerable.Range(0, count).Select(_ => FreePort.Next()).ToList();
        var processes = ports.Select((port, i) => StartMagpie(Path.Combine(run, $"ingest-nodes-{count}-{i}"), port, "--target", "ingest", "--partitioned", "--kafka", broker.BootstrapServers)).ToList();
        try
        {
            foreach (var port in ports) await WaitHealthy(port);
            var urls = ports.Select(p => new Uri($"http://127.0.0.1:{p}/")).ToList();
            Console.WriteLine(takeover ? $"takeover: 3 nodes, {size:N0} posts, then one killed" : $"{count} node(s): warm-up, then {size:N0} posts");
            if (!takeover) await PartitionedIngestBenchmark.RunAsync(processes, urls, IngestBenchmark.Batches(20_000, batchSize, seed: 7).Select(b => b.Select(w => w with { Id = "warmup/" + w.Id }).ToArray()).ToList(), clients);
            var outcome = await PartitionedIngestBenchmark.RunAsync(processes, urls, IngestBenchmark.Batches(size, batchSize, seed: 42), clients);
            if (!takeover)
            {
                var (rate, cpu) = await PartitionedIngestBenchmark.KafkaInputAsync(processes, urls, broker.BootstrapServers,
                    IngestBenchmark.Batches(size, 512, seed: 43).Select(b => b.Select(w => w with { Id = "topic/" + w.Id }).ToArray()).ToList());
                outcome = outcome with { KafkaDocsPerSecond = rate, KafkaCpuMicrosPerDoc = cpu };
            }
            if (takeover)
            {
                var docsHeld = await PartitionedIngestBenchmark.DocumentsAsync(urls[0]);
                outcome = outcome with { TakeoverSeconds = await PartitionedIngestBenchmark.TakeoverAsync(processes, urls), TakeoverDocs = docsHeld };
            }
            outcomes.Add(outcome);
            Console.WriteLine($"  HTTP through any node: {outcome.DocsPerSecond:N0} docs/s, {outcome.CpuMicrosPerDoc:N1} µs CPU per doc (all nodes)" + (takeover ? $", takeover {outcome.TakeoverSeconds:N1} s"
                : $"; magpie.documents: {outcome.KafkaDocsPerSecond:N0} docs/s, {outcome.KafkaCpuMicrosPerDoc:N1} µs CPU per doc"));
        }
        finally
        {
            foreach (var p in processes.Where(p => !p.HasExited)) { p.Kill(); p.WaitForExit(); }
        }
    }
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }
    Console.WriteLine();
    Console.WriteLine($"{"nodes",6} {"docs",10} {"HTTP docs/s",12} {"µs/doc",8} {"topic docs/s",13} {"µs/doc",8} {"takeover s",11}");
    foreach (var o in outcomes) Console.WriteLine($"{o.Nodes,6} {o.Docs,10:N0} {o.DocsPerSecond,12:N0} {o.CpuMicrosPerDoc,8:N1} {o.KafkaDocsPerSecond,13:N0} {o.KafkaCpuMicrosPerDoc,8:N1} {(double.IsNaN(o.TakeoverSeconds) ? "" : o.TakeoverSeconds.ToString("N1", CultureInfo.InvariantCulture)),11}");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "ingest-nodes", cores = Environment.ProcessorCount, clients, batch = batchSize,
        runs = outcomes.Where(o => double.IsNaN(o.TakeoverSeconds)).Select(o => new
        {
            nodes = o.Nodes, docs = o.Docs, http_docs_per_s = Math.Round(o.DocsPerSecond), http_cpu_us_per_doc = Math.Round(o.CpuMicrosPerDoc, 1),
            topic_docs_per_s = Math.Round(o.KafkaDocsPerSecond), topic_cpu_us_per_doc = Math.Round(o.KafkaCpuMicrosPerDoc, 1),
        }),
        takeover = outcomes.Where(o => !double.IsNaN(o.TakeoverSeconds)).Select(o => new { nodes = o.Nodes, docs = o.TakeoverDocs, load_docs_per_s = Math.Round(o.DocsPerSecond), seconds = Math.Round(o.TakeoverSeconds, 1) }),
    }));
}

static Process StartMagpie(string dataDir, int port, params string[] extra)
{
    var dll = Path.Combine(FindRoot(), "magpie", "bin", "Release", "net10.0", "magpie.dll");
    var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
    foreach (var a in new[] { dll, "run", "--data-dir", dataDir, "--http-port", port.ToString(CultureInfo.InvariantCulture) }.Concat(extra)) psi.ArgumentList.Add(a);
    psi.Environment["MAGPIE__ADVERTISEDURL"] = $"http://127.0.0.1:{port}/";
    psi.Environment["MAGPIE__PG__PORT"] = "0";   // any free port: runs never collide on 5433
    psi.Environment["Logging__LogLevel__Magpie.Requests"] = "Warning";   // the per-request log line is not what we measure
    // Runtime knobs for the magpie process alone (the raw side in this process keeps its own): BENCH_MAGPIE_ENV="K=V;K2=V2".
    foreach (var pair in (Environment.GetEnvironmentVariable("BENCH_MAGPIE_ENV") ?? "").Split(';', StringSplitOptions.RemoveEmptyEntries))
    {
        var eq = pair.IndexOf('=');
        if (eq <= 0) throw new ArgumentException($"BENCH_MAGPIE_ENV: '{pair}' is not NAME=value (pairs are separated by ';')");
        psi.Environment[pair[..eq]] = pair[(eq + 1)..];
    }
    var p = Process.Start(psi)!;
    // BENCH_MAGPIE_LOG=path keeps the magpie process's log (dropped otherwise).
    var logPath = Environment.GetEnvironmentVariable("BENCH_MAGPIE_LOG");
    var log = logPath is null ? null : TextWriter.Synchronized(new StreamWriter(logPath, append: true) { AutoFlush = true });
    p.OutputDataReceived += (_, e) => { if (e.Data is not null) log?.WriteLine(e.Data); };
    p.ErrorDataReceived += (_, e) => { if (e.Data is not null) Console.Error.WriteLine(e.Data); };
    p.BeginOutputReadLine();
    p.BeginErrorReadLine();
    return p;
}

static async Task WaitHealthy(int port)
{
    using var http = new HttpClient();
    for (var i = 0; i < 300; i++)
    {
        try { if ((await http.GetAsync($"http://127.0.0.1:{port}/health")).IsSuccessStatusCode) return; }
        catch (HttpRequestException) { }
        await Task.Delay(100);
    }
    throw new TimeoutException("magpie did not start");
}

static string FindRoot()
{
    for (var d = new DirectoryInfo(AppContext.BaseDirectory); d is not null; d = d.Parent)
        if (File.Exists(Path.Combine(d.FullName, "Magpie.sln"))) return d.FullName;
    throw new InvalidOperationException("run from inside the repository");
}

/// <summary>Time the hypervisor ran other guests while this machine's CPUs wanted to run (<c>/proc/stat</c> steal), all CPUs.</summary>
static TimeSpan MachineSteal() =>
    File.Exists("/proc/stat") ? TimeSpan.FromSeconds(long.Parse(File.ReadLines("/proc/stat").First().Split(' ', StringSplitOptions.RemoveEmptyEntries)[8]) / 100.0) : TimeSpan.Zero;

/// <summary>
/// Runs a query at least three times and for at least <paramref name="seconds"/>, unmeasured: the runtime recompiles hot
/// methods at tier 1 only after 30 calls and a quiet spell, so a few warm-up runs left small runs' p50s on tier-0 code.
/// </summary>
static async Task WarmUpAsync(Func<Task> once, double seconds)
{
    var watch = Stopwatch.StartNew();
    for (var runs = 0; runs < 3 || watch.Elapsed.TotalSeconds < seconds; runs++) await once();
}

/// <summary>
/// Waits until the processes are idle (under a tenth of a core each over two half seconds in a row; at most 30 s) and says how
/// long that took. After a warm-up the runtime is still compiling the hot methods again at tier 1 on a background thread:
/// 2.2 s of CPU in magpie's first 5 s of index-phases' ingest in one perf profile, a fifth of that phase's CPU. Every measured
/// side, raw included, starts from a quiet process, so the figures are steady state, not the JIT's backlog.
/// </summary>
static async Task WaitQuietAsync(string what, params Process[] processes)
{
    var watch = Stopwatch.StartNew();
    TimeSpan[] Cpu() => processes.Select(p => { p.Refresh(); return p.TotalProcessorTime; }).ToArray();
    var quiet = 0;
    var before = Cpu();
    while (quiet < 2 && watch.Elapsed < TimeSpan.FromSeconds(30))
    {
        await Task.Delay(500);
        var now = Cpu();
        quiet = now.Zip(before, (a, b) => a - b).All(d => d < TimeSpan.FromMilliseconds(50)) ? quiet + 1 : 0;
        before = now;
    }
    Console.WriteLine($"  {what}: quiet after {watch.Elapsed.TotalSeconds:F1} s");
}

/// <summary>Busy CPU time of the whole machine (all cores, from /proc/stat); zero where there is none.</summary>
static TimeSpan MachineBusy()
{
    if (!File.Exists("/proc/stat")) return TimeSpan.Zero;
    var cpu = File.ReadLines("/proc/stat").First().Split(' ', StringSplitOptions.RemoveEmptyEntries).Skip(1).Select(long.Parse).ToArray();
    var busy = cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + cpu[7];   // user nice system irq softirq steal (not idle, iowait)
    return TimeSpan.FromSeconds(busy / 100.0);   // USER_HZ
}

/// <summary>The embedded side of `index`: its rate, its process's CPU, and the freshness, query and cursor latencies measured on it.</summary>
sealed record EmbeddedRun(double Rate, TimeSpan ServerCpu, double MapMicros, List<double> Fresh, Dictionary<string, List<double>> Latency,
    int Depth, List<double> Page1, List<double> Deep);

/// <summary>A benchmark's magpie process and its client; disposing lets go of both (the process is stopped by StopMagpie).</summary>
sealed record LoadedMagpie(Process Process, HttpClient Http, Uri Writes) : IDisposable
{
    public void Dispose()
    {
        Http.Dispose();
        Process.Dispose();
    }
}
