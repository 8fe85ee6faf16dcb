using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Text;

namespace Magpie.Bench;

/// <summary>
/// Overload: many connections at once, each a client sending a read (GET a document) or a write (PUT one) as fast as it is
/// answered, for a while. Latency is kept per outcome, so what Magpie admitted (2xx) and what it shed (503 + Retry-After) are
/// seen apart; a client that gets no answer within <see cref="ClientTimeout"/> counts as timed out (queueing that turns into
/// timeouts is the failure). The server's peak resident memory comes from /proc (VmHWM); recovery is the time after the
/// load stops until a read answers 200 within 100 ms.
/// </summary>
public static class OverloadBenchmark
{
    public static readonly TimeSpan ClientTimeout = TimeSpan.FromSeconds(10);

    public sealed record Result(int Connections, double Seconds, long Admitted, long Shed, long TimedOut, long Failed, long OtherStatus,
        double AdmittedP50, double AdmittedP99, double AdmittedMax, double ShedP99, bool ShedHadRetryAfter, long PeakRssMb, double RecoverySeconds);

    public static async Task<Result> RunAsync(Uri baseUrl, int serverPid, int connections, TimeSpan duration, int documents, double writeShare)
    {
        using var handler = new SocketsHttpHandler { MaxConnectionsPerServer = connections, PooledConnectionLifetime = Timeout.InfiniteTimeSpan, ConnectTimeout = ClientTimeout };
        using var http = new HttpClient(handler) { BaseAddress = baseUrl, Timeout = ClientTimeout };
        var admitted = new ConcurrentBag<double>();
        var shed = new ConcurrentBag<double>();
        long timedOut = 0, failed = 0, other = 0, retryAfterMissing = 0;
        var body = Encoding.UTF8.GetBytes("{\"Title\":\"overload\",\"Body\":\"" + new string('x', 900) + "\",\"Score\":1}");
        using var stop = new CancellationTokenSource(duration);
        var clock = Stopwatch.StartNew();
        var clients = Enumerable.Range(0, connections).Select(c => Task.Run(async () =>
        {
            var random = new Random(c);
            while (!stop.IsCancellationRequested)
            {
                var id = $"load/{random.Next(documents)}";
                using var request = random.NextDouble() < writeShare
                    ? new HttpRequestMessage(HttpMethod.Put, $"docs/{id}") { Content = new ByteArrayContent(body) { Headers = { ContentType = new("application/json") } } }
                    : new HttpRequestMessage(HttpMethod.Get, $"docs/{id}");
                var started = Stopwatch.GetTimestamp();
                try
                {
                    using var response = await http.SendAsync(request, HttpCompletionOption.ResponseContentRead);
                    var ms = Stopwatch.GetElapsedTime(started).TotalMilliseconds;
                    if (response.IsSuccessStatusCode || response.StatusCode == HttpStatusCode.NotFound) admitted.Add(ms);
                    else if (response.StatusCode == HttpStatusCode.ServiceUnavailable)
                    {
                        shed.Add(ms);
                        if (response.Headers.RetryAfter is null) Interlocked.Increment(ref retryAfterMissing);
                        // A polite client waits as told; here a short pause keeps the pressure on.
                        await Task.Delay(50);
                    }
                    else Interlocked.Increment(ref other);
                }
                catch (TaskCanceledException) { Interlocked.Increment(ref timedOut); }
                catch (HttpRequestException) { Interlocked.Increment(ref failed); await Task.Delay(50); }
            }
        })).ToList();
        await Task.WhenAll(clients);
        var seconds = clock.Elapsed.TotalSeconds;

        var recovery = Stopwatch.StartNew();
        using (var probe = new HttpClient { BaseAddress = baseUrl, Timeout = ClientTimeout })
            while (recovery.Elapsed < TimeSpan.FromMinutes(1))
            {
                var t = Stopwatch.StartNew();
                try
                {
                    using var r = await probe.GetAsync("docs/load/1");
                    if (r.StatusCode is HttpStatusCode.OK or HttpStatusCode.NotFound && t.ElapsedMilliseconds < 100) break;
                }
                catch (HttpRequestException) { }
                await Task.Delay(20);
            }

        var a = admitted.Order().ToArray();
        var s = shed.Order().ToArray();
        return new Result(connections, seconds, a.Length, s.Length, timedOut, failed, other,
            Percentile(a, 0.50), Percentile(a, 0.99), a.Length == 0 ? 0 : a[^1], Percentile(s, 0.99), retryAfterMissing == 0, PeakRssMb(serverPid),
            recovery.Elapsed.TotalSeconds);
    }

    private static double Percentile(double[] sorted, double p) => sorted.Length == 0 ? 0 : sorted[Math.Min(sorted.Length - 1, (int)(p * sorted.Length))];

    private static long PeakRssMb(int pid)
    {
        foreach (var line in File.ReadLines($"/proc/{pid}/status"))
            if (line.StartsWith("VmHWM:", StringComparison.Ordinal))
                return long.Parse(line.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1]) / 1024;
        return -1;
    }
}
