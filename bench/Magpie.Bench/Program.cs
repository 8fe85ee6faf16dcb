using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using Magpie.Bench;
using Magpie.Tests.Fixtures;

// Usage: dotnet run -c Release --project bench/Magpie.Bench -- [--docs N] [--clients C] [--batch B] [--dir D]
//        dotnet run -c Release --project bench/Magpie.Bench -- etl [--docs N] [--rabbitmq-url amqp://…]
var docs = Arg("--docs", 300_000);
var clients = (int)Arg("--clients", 8);
var batchSize = (int)Arg("--batch", 128);
var baseDir = ArgText("--dir") ?? Path.Combine(Path.GetTempPath(), "magpie-bench");
Directory.CreateDirectory(baseDir);
var run = Path.Combine(baseDir, DateTime.UtcNow.ToString("yyyyMMddHHmmss"));
if (args.FirstOrDefault() == "etl")
{
    await RunEtlAsync();
    return;
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
    await EtlBenchmark.RunAsync(uri, rabbitUrl, IngestBenchmark.Batches(10_000, 128, seed: 7).Select(b => b.Select(w => w with { Id = "warmup/" + w.Id }).ToArray()).ToList(), "warmup");
    var (etl, bare, bareHeaders) = await EtlBenchmark.RunAsync(uri, rabbitUrl, IngestBenchmark.Batches(n, 128, seed: 42), "measured");
    etlMagpie.Kill();
    etlMagpie.WaitForExit();
    await EtlBenchmark.CleanUpAsync(rabbitUrl, ["warmup", "measured"]);
    try { Directory.Delete(run, recursive: true); } catch (IOException) { }
    var etlRatio = etl.DocsPerSecond / bare.DocsPerSecond;
    var sameHeadersRatio = etl.DocsPerSecond / bareHeaders.DocsPerSecond;
    Console.WriteLine();
    Console.WriteLine($"{"side",-44} {"msgs/s",12} {"MB/s",8} {"seconds",8}");
    foreach (var r in new[] { etl, bare, bareHeaders })
        Console.WriteLine($"{r.Name,-44} {r.DocsPerSecond,12:N0} {r.MBPerSecond,8:F1} {r.Elapsed.TotalSeconds,8:F1}");
    Console.WriteLine($"ratio magpie/bare: {etlRatio:F2}; magpie/bare with the same headers: {sameHeadersRatio:F2}   ({n:N0} docs, {Environment.ProcessorCount} cores)");
    Console.WriteLine(JsonSerializer.Serialize(new
    {
        benchmark = "etl-rabbitmq", docs = n, cores = Environment.ProcessorCount,
        magpie_msgs_per_s = Math.Round(etl.DocsPerSecond), bare_msgs_per_s = Math.Round(bare.DocsPerSecond),
        bare_same_headers_msgs_per_s = Math.Round(bareHeaders.DocsPerSecond),
        magpie_mb_per_s = Math.Round(etl.MBPerSecond, 1), bare_mb_per_s = Math.Round(bare.MBPerSecond, 1),
        ratio = Math.Round(etlRatio, 3), ratio_same_headers = Math.Round(sameHeadersRatio, 3),
    }));
}

long Arg(string name, long fallback) => ArgText(name) is { } v ? long.Parse(v, CultureInfo.InvariantCulture) : fallback;
string? ArgText(string name) => Array.IndexOf(args, name) is var i and >= 0 && i + 1 < args.Length ? args[i + 1] : null;

static Process StartMagpie(string dataDir, int port)
{
    var dll = Path.Combine(FindRoot(), "magpie", "bin", "Release", "net10.0", "magpie.dll");
    var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
    foreach (var a in new[] { dll, "run", "--data-dir", dataDir, "--http-port", port.ToString(CultureInfo.InvariantCulture) }) psi.ArgumentList.Add(a);
    psi.Environment["Logging__LogLevel__Magpie.Requests"] = "Warning";   // the per-request log line is not what we measure
    var p = Process.Start(psi)!;
    p.OutputDataReceived += (_, _) => { };
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
