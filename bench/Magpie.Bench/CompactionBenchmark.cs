using System.Diagnostics;
using System.Net.Http.Json;
using System.Text.Json;

namespace Magpie.Bench;

/// <summary>
/// The compaction figure: one embedded Magpie writes <c>docs</c> synthetic posts, then updates every one of them
/// <c>rounds</c> times over HTTP bulk; the same run is made with compaction off and on (the only difference). Reported per
/// side: ingest docs/s per round (compaction runs while the next rounds are written), and the disk the document store uses
/// at the end (after the last pass settled).
/// </summary>
public static class CompactionBenchmark
{
    public sealed record Side(string Name, List<double> RoundDocsPerSecond, long DiskBytes, long LogBytes, long Passes, double SettleSeconds);

    public static async Task<Side> RunAsync(string name, bool compaction, Func<string, int, System.Diagnostics.Process> start, Func<int, Task> healthy,
        string dataDir, int docs, int rounds)
    {
        Environment.SetEnvironmentVariable("MAGPIE__COMPACTION__ENABLED", compaction ? "true" : "false");
        Environment.SetEnvironmentVariable("MAGPIE__COMPACTION__INTERVALSECONDS", "5");
        Environment.SetEnvironmentVariable("MAGPIE__COMPACTION__MINMEGABYTES", "64");
        var port = 18000 + Random.Shared.Next(1000);
        using var magpie = start(dataDir, port);
        await healthy(port);
        var uri = new Uri($"http://127.0.0.1:{port}/");
        using var http = new HttpClient { BaseAddress = uri };
        var rates = new List<double>();
        for (var round = 0; round <= rounds; round++)
        {
            var batches = IngestBenchmark.Batches(docs, 512, seed: 1000 + round);   // the same ids every round, new contents
            var result = await IngestBenchmark.HttpBulkAsync(uri, batches, 8);
            rates.Add(result.DocsPerSecond);
            Console.WriteLine($"  {name}: round {round} ({(round == 0 ? "load" : "update")}) {result.DocsPerSecond:N0} docs/s, store {Megabytes(DiskOf(dataDir)):N0} MB");
        }
        // With compaction: until a pass has run after the last write and the log's start stays put for 10 s.
        var settle = Stopwatch.StartNew();
        long passes = 0, begin = -1, stableSince = 0;
        while (compaction && settle.Elapsed < TimeSpan.FromMinutes(3))
        {
            var log = (await http.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("changeLog");
            passes = log.GetProperty("passes").GetInt64();
            var b = log.GetProperty("beginAddress").GetInt64();
            if (b != begin) (begin, stableSince) = (b, settle.ElapsedMilliseconds);
            else if (passes > 0 && settle.ElapsedMilliseconds - stableSince > 10_000) break;
            await Task.Delay(500);
        }
        var logBytes = 0L;
        if (compaction)
        {
            var log = (await http.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("changeLog");
            logBytes = log.GetProperty("tailAddress").GetInt64() - log.GetProperty("beginAddress").GetInt64();
        }
        var disk = DiskOf(dataDir);
        magpie.Kill();
        magpie.WaitForExit();
        return new Side(name, rates, disk, logBytes, passes, compaction ? settle.Elapsed.TotalSeconds : 0);
    }

    public static long DiskOf(string dataDir)
    {
        var documents = Path.Combine(dataDir, "documents");
        return Directory.Exists(documents) ? Directory.EnumerateFiles(documents, "*", SearchOption.AllDirectories).Sum(f => new FileInfo(f).Length) : 0;
    }

    public static double Megabytes(long bytes) => bytes / 1048576.0;
}
