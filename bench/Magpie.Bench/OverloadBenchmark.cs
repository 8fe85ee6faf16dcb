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
/// load stops until a read answers 200 within 100 ms. With a query share, that share of the requests are RQL queries (a
/// term match on <see cref="QueryIndex"/>, a page of 20), so reads, writes and queries compete for the same admission.
/// </summary>
public static class OverloadBenchmark
{
    public static readonly TimeSpan ClientTimeout = TimeSpan.FromSeconds(10);
    public const string QueryIndex = "Overload/Posts";

    public sealed record Result(int Connections, double Seconds, long Admitted, long Shed, long TimedOut, long Failed, long OtherStatus,
        double AdmittedP50, double AdmittedP99, double AdmittedMax, double ShedP99, bool ShedHadRetryAfter, long PeakRssMb, double RecoverySeconds,
        long AdmittedQueries, double QueryP50, double QueryP99);

    public static async Task<Result> RunAsync(Uri baseUrl, int serverPid, int connections, TimeSpan duration, int documents, double writeShare, TimeSpan shedPause,
        double queryShare = 0)
    {
        using var handler = new SocketsHttpHandler { MaxConnectionsPerServer = connections, PooledConnectionLifetime = Timeout.InfiniteTimeSpan, ConnectTimeout = ClientTimeout };
        using var http = new HttpClient(handler) { BaseAddress = baseUrl, Timeout = ClientTimeout };
        var admitted = new ConcurrentBag<double>();
        var admittedQueries = new ConcurrentBag<double>();
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
                var pick = random.NextDouble();
                var isQuery = pick < queryShare;
                using var request = isQuery
                    ? new HttpRequestMessage(HttpMethod.Post, "queries")
                    {
                        Content = new StringContent($$"""{"query":"from index '{{QueryIndex}}' where Score = {{random.Next(20)}}","pageSize":20}""",
                            Encoding.UTF8, "application/json"),
                    }
                    : pick < queryShare + writeShare
                        ? new HttpRequestMessage(HttpMethod.Put, $"docs/{id}") { Content = new ByteArrayContent(body) { Headers = { ContentType = new("application/json") } } }
                        : new HttpRequestMessage(HttpMethod.Get, $"docs/{id}");
                var started = Stopwatch.GetTimestamp();
                try
                {
                    using var response = await http.SendAsync(request, HttpCompletionOption.ResponseContentRead);
                    var ms = Stopwatch.GetElapsedTime(started).TotalMilliseconds;
                    if (response.IsSuccessStatusCode || response.StatusCode == HttpStatusCode.NotFound)
                    {
                        admitted.Add(ms);
                        if (isQuery) admittedQueries.Add(ms);
                    }
                    else if (response.StatusCode == HttpStatusCode.ServiceUnavailable)
                    {
                        shed.Add(ms);
                        if (response.Headers.RetryAfter is null) Interlocked.Increment(ref retryAfterMissing);
                        // A polite client waits as told (Retry-After); by default this one asks again at once, as wrk does.
                        if (shedPause > TimeSpan.Zero) await Task.Delay(shedPause);
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
        var q = admittedQueries.Order().ToArray();
        return new Result(connections, seconds, a.Length, s.Length, timedOut, failed, other,
            Percentile(a, 0.50), Percentile(a, 0.99), a.Length == 0 ? 0 : a[^1], Percentile(s, 0.99), retryAfterMissing == 0, PeakRssMb(serverPid),
            recovery.Elapsed.TotalSeconds, q.Length, Percentile(q, 0.50), Percentile(q, 0.99));
    }

    public sealed record StreamsResult(int Streams, double Seconds, long BytesRead, long RssStartMb, long RssOpenMb, long RssMaxMb, long RssEndMb);

    /// <summary>Slow readers: <paramref name="streams"/> streamed queries each read at <paramref name="bytesPerSecond"/>; the server's
    /// resident memory sampled every second (it must stay flat: results go out as the client takes them, never buffered whole).</summary>
    public static async Task<StreamsResult> SlowStreamsAsync(Uri baseUrl, int serverPid, string rql, int streams, int bytesPerSecond, TimeSpan duration)
    {
        using var http = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = streams + 1 }) { BaseAddress = baseUrl, Timeout = Timeout.InfiniteTimeSpan };
        var rssStart = RssMb(serverPid);
        long read = 0, rssMax = rssStart, rssOpen = -1;
        using var stop = new CancellationTokenSource(duration);
        var clock = Stopwatch.StartNew();
        var sampler = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                rssMax = Math.Max(rssMax, RssMb(serverPid));
                // Once every stream has its first page in hand: from here on, memory must not grow with the bytes sent.
                if (rssOpen < 0 && clock.Elapsed > TimeSpan.FromSeconds(5)) rssOpen = RssMb(serverPid);
                try { await Task.Delay(1000, stop.Token); } catch (OperationCanceledException) { }
            }
        });
        var readers = Enumerable.Range(0, streams).Select(_ => Task.Run(async () =>
        {
            using var request = new HttpRequestMessage(HttpMethod.Post, "streams/queries")
            {
                Content = new StringContent($$"""{"query":{{System.Text.Json.JsonSerializer.Serialize(rql)}}}""", Encoding.UTF8, "application/json"),
            };
            using var response = await http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead);
            response.EnsureSuccessStatusCode();
            await using var body = await response.Content.ReadAsStreamAsync();
            var buffer = new byte[bytesPerSecond];
            try
            {
                while (!stop.IsCancellationRequested)
                {
                    var n = await body.ReadAsync(buffer, stop.Token);
                    if (n == 0) break;
                    Interlocked.Add(ref read, n);
                    await Task.Delay(1000, stop.Token);
                }
            }
            catch (OperationCanceledException) { }
        })).ToList();
        await Task.WhenAll(readers);
        await sampler;
        return new StreamsResult(streams, clock.Elapsed.TotalSeconds, read, rssStart, rssOpen, rssMax, RssMb(serverPid));
    }

    public sealed record IdleResult(int Tried, int Accepted, int Refused, string? RefusedWith, int OtherErrors, bool NewConnectionAfterClose);

    /// <summary><paramref name="connections"/> PostgreSQL connections opened and left idle: up to the endpoint's limit are served,
    /// the rest refused at once with 53300; once some close, a new one is served again.</summary>
    public static async Task<IdleResult> IdlePgAsync(int port, int connections)
    {
        var cs = $"Host=127.0.0.1;Port={port};Username=bench;Database=magpie;Pooling=false;Timeout=15;Server Compatibility Mode=NoTypeLoading";
        var open = new ConcurrentBag<Npgsql.NpgsqlConnection>();
        int refused = 0, other = 0;
        string? refusedWith = null;
        await Task.WhenAll(Enumerable.Range(0, connections).Select(async _ =>
        {
            var db = new Npgsql.NpgsqlConnection(cs);
            try { await db.OpenAsync(); open.Add(db); }
            catch (Npgsql.PostgresException e) when (e.SqlState == "53300") { Interlocked.Increment(ref refused); refusedWith = $"{e.SqlState}: {e.MessageText}"; await db.DisposeAsync(); }
            catch (Exception) { Interlocked.Increment(ref other); await db.DisposeAsync(); }
        }));
        var accepted = open.Count;
        foreach (var db in open) await db.DisposeAsync();
        await Task.Delay(500);
        bool again;
        try
        {
            await using var db = new Npgsql.NpgsqlConnection(cs);
            await db.OpenAsync();
            await using var cmd = new Npgsql.NpgsqlCommand("SELECT 1", db);
            again = Equals(await cmd.ExecuteScalarAsync(), 1);
        }
        catch (Exception) { again = false; }
        return new IdleResult(connections, accepted, refused, refusedWith, other, again);
    }

    private static long RssMb(int pid)
    {
        foreach (var line in File.ReadLines($"/proc/{pid}/status"))
            if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
                return long.Parse(line.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1]) / 1024;
        return -1;
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
