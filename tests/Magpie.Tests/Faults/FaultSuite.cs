using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Magpie.Producers.Subscriptions;
using Magpie.Tests.Etl;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Faults;

/// <summary>
/// Tries hard to lose data, embedded: a steady writer of numbered documents records every acknowledged write while a map
/// index, a map/reduce index, a RabbitMQ ETL task and a subscription (a .NET SubscriptionWorker) run; then rounds of faults —
/// kill -9 of the magpie process, RabbitMQ stopped for a while. After each round, with the writer paused: every acknowledged
/// write is in the store (its etag or a later one); the map and map/reduce indexes answer exactly as a fresh rebuild of the
/// same definitions; every final version (id@etag) reached RabbitMQ; the subscription delivered every final version.
/// No xunit here: the benchmark runner links it for long runs (`bench … faults --rounds N`).
/// </summary>
public sealed class FaultSuite : IAsyncDisposable
{
    public enum Fault { KillAll, RabbitMqDown }

    /// <param name="RecoverySeconds">From the end of the fault (process restarted, broker back) until writes are acknowledged
    /// again (kill) or every final version reached RabbitMQ (broker outage).</param>
    public sealed record Round(int Number, Fault Fault, long WritesAcknowledged, double WritesPerSecond, int Lost, int IndexMismatches, int MissingInRabbitMq,
        int MissingInSubscription, long DuplicatesRabbitMq, long DuplicatesSubscription, double RecoverySeconds);

    private const int Ids = 3_000, Groups = 20;
    private const string Map = "Faults/ByGroup", Totals = "Faults/Totals";
    private static readonly string MapDefinition = """{ "maps": ["map('Faults', d => ({ Group: d.group, N: d.n }))"] }""";
    private static readonly string TotalsDefinition = """
        { "maps": ["map('Faults', d => ({ Group: d.group, Count: 1, Sum: d.n }))"],
          "reduce": "groupBy(x => x.Group).aggregate(g => ({ Group: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0), Sum: g.values.reduce((s, v) => s + v.Sum, 0) }))" }
        """;

    private readonly RabbitMqBroker _rabbit;
    private readonly MagpieProcess _magpie;
    private readonly QueueReader _queue;
    private readonly Action<string> _log;
    private readonly ConcurrentDictionary<string, long> _acknowledged = new();
    private readonly ConcurrentDictionary<string, long> _subscribed = new();
    private readonly ConcurrentDictionary<string, int> _subscribedCount = new();
    private readonly ConcurrentDictionary<int, long> _refused = new();
    private readonly CancellationTokenSource _stop = new();
    private long _writes, _counter;
    private volatile bool _paused;
    private Task? _writer, _subscription;
    private int _freshIndexes;

    private FaultSuite(RabbitMqBroker rabbit, MagpieProcess magpie, QueueReader queue, Action<string> log) =>
        (_rabbit, _magpie, _queue, _log) = (rabbit, magpie, queue, log);

    public static async Task<FaultSuite> StartAsync(Action<string> log)
    {
        var rabbit = await RabbitMqBroker.StartOwnedAsync();
        var queue = await QueueReader.StartAsync(rabbit.Url, "faults-q", "faults");
        var magpie = await MagpieProcess.StartAsync();
        var suite = new FaultSuite(rabbit, magpie, queue, log);
        await suite.SetUpAsync();
        return suite;
    }

    private async Task SetUpAsync()
    {
        var http = _magpie.Http;
        await Expect(await http.PutAsync($"indexes/{Map}", Json(MapDefinition)), HttpStatusCode.NoContent);
        await Expect(await http.PutAsync($"indexes/{Totals}", Json(TotalsDefinition)), HttpStatusCode.NoContent);
        await Expect(await http.PutAsJsonAsync("etl/connections/rabbit", new { type = "rabbitmq", url = _rabbit.Url }), HttpStatusCode.NoContent);
        await Expect(await http.PutAsJsonAsync("etl/tasks/faults", new
        {
            connection = "rabbit",
            transforms = new[] { new { collections = new[] { "Faults" }, script = "loadTo('faults', { Id: id(this), N: this.n });" } },
        }), HttpStatusCode.NoContent);
        await Expect(await http.PostAsJsonAsync("subscriptions", new { name = "faults", query = "from Faults" }), HttpStatusCode.Created);
        // Four writers, as four clients would: new and updated documents.
        _writer = Task.WhenAll(Enumerable.Range(0, 4).Select(w => Task.Run(() => WriteAsync(w))));
        _subscription = Task.Run(SubscribeAsync);
    }

    /// <summary>Numbered documents, new and updated, as fast as they are acknowledged; a refused or unanswered write is not counted.</summary>
    private async Task WriteAsync(int writer)
    {
        var random = new Random(writer);
        using var http = new HttpClient { BaseAddress = _magpie.BaseUrl, Timeout = TimeSpan.FromSeconds(10) };
        while (!_stop.IsCancellationRequested)
        {
            if (_paused) { await Task.Delay(50); continue; }
            var n = Interlocked.Increment(ref _counter);
            var id = $"faults/{random.Next(Ids)}";
            var body = $$$"""{"n":{{{n}}},"group":"g{{{n % Groups}}}","@metadata":{"@collection":"Faults"}}""";
            try
            {
                using var r = await http.PutAsync($"docs/{id}", Json(body));
                if (r.StatusCode is not (HttpStatusCode.Created or HttpStatusCode.OK))
                {
                    _refused.AddOrUpdate((int)r.StatusCode, 1, (_, c) => c + 1);
                    await Task.Delay(50);
                    continue;
                }
                var etag = (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("etag").GetInt64();
                _acknowledged.AddOrUpdate(id, etag, (_, e) => Math.Max(e, etag));
                Interlocked.Increment(ref _writes);
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException or IOException) { await Task.Delay(50); }
        }
    }

    private async Task SubscribeAsync()
    {
        using var http = new HttpClient { BaseAddress = _magpie.BaseUrl, Timeout = TimeSpan.FromSeconds(60) };
        var worker = new SubscriptionWorker(http, new SubscriptionWorkerOptions("faults") { MaxDocsPerBatch = 500, RetryDelay = TimeSpan.FromMilliseconds(200), MaxRetryDelay = TimeSpan.FromSeconds(2) });
        try
        {
            await worker.RunAsync((batch, _) =>
            {
                foreach (var item in batch.Items)
                {
                    _subscribed.AddOrUpdate(item.Id, item.Etag, (_, e) => Math.Max(e, item.Etag));
                    _subscribedCount.AddOrUpdate($"{item.Id}@{item.Etag}", 1, (_, c) => c + 1);
                }
                return Task.CompletedTask;
            }, _stop.Token);
        }
        catch (OperationCanceledException) { }
    }

    public async Task<Round> RunRoundAsync(int number, Fault fault, TimeSpan outage)
    {
        var (writesBefore, clock) = (Interlocked.Read(ref _writes), Stopwatch.StartNew());
        await Task.Delay(TimeSpan.FromSeconds(3));   // writes in flight when the fault hits
        switch (fault)
        {
            case Fault.KillAll:
                _magpie.Crash();
                await Task.Delay(500);
                await _magpie.StartAsync();
                break;
            case Fault.RabbitMqDown:
                await _rabbit.StopAsync();
                await Task.Delay(outage);
                await _rabbit.RestartAsync();
                break;
        }
        var recovery = Stopwatch.StartNew();
        var before = Interlocked.Read(ref _writes);
        while (Interlocked.Read(ref _writes) == before && recovery.Elapsed < TimeSpan.FromMinutes(2)) await Task.Delay(10);
        var recovered = recovery.Elapsed.TotalSeconds;
        await Task.Delay(TimeSpan.FromSeconds(3));
        var rate = (Interlocked.Read(ref _writes) - writesBefore) / clock.Elapsed.TotalSeconds;

        _paused = true;
        await Task.Delay(500);   // the last writes answered
        var finals = await StoredAsync();
        var lost = _acknowledged.Count(a => !finals.TryGetValue(a.Key, out var stored) || stored < a.Value);
        var missingRabbit = await MissingAsync(finals, () => RabbitFinals(), "RabbitMQ");
        if (fault == Fault.RabbitMqDown) recovered = recovery.Elapsed.TotalSeconds;
        var missingSubscription = await MissingAsync(finals, () => new Dictionary<string, long>(_subscribed), "the subscription");
        var mismatches = await IndexMismatchesAsync();
        var received = await _queue.WaitForAsync(_ => true, TimeSpan.FromSeconds(1));
        var round = new Round(number, fault, Interlocked.Read(ref _writes), rate, lost, mismatches, missingRabbit, missingSubscription,
            received.Count - received.Select(m => m.MessageId).Distinct().Count(), _subscribedCount.Values.Sum(c => c - 1L), recovered);
        _log($"round {number} ({fault}): {round}; writes refused so far: {string.Join(", ", _refused.Select(r => $"{r.Key}×{r.Value}"))}");
        _paused = false;
        return round;
    }

    /// <summary>id → etag now in the store of every document a write was acknowledged for (HEAD, as a client checks).</summary>
    private async Task<Dictionary<string, long>> StoredAsync()
    {
        var stored = new ConcurrentDictionary<string, long>();
        await Parallel.ForEachAsync(_acknowledged.Keys, new ParallelOptions { MaxDegreeOfParallelism = 16 }, async (id, ct) =>
        {
            using var r = await _magpie.Http.SendAsync(new HttpRequestMessage(HttpMethod.Head, $"docs/{id}"), ct);
            if (r.StatusCode == HttpStatusCode.OK && r.Headers.ETag is { } etag) stored[id] = long.Parse(etag.Tag.Trim('"'));
        });
        return new Dictionary<string, long>(stored);
    }

    /// <summary>The live indexes against fresh ones with the same definitions, built from scratch now: per-group counts and
    /// ranges of the map index, and every row of the map/reduce index.</summary>
    private async Task<int> IndexMismatchesAsync()
    {
        var n = Interlocked.Increment(ref _freshIndexes);
        var (freshMap, freshTotals) = ($"Faults/FreshByGroup{n}", $"Faults/FreshTotals{n}");
        await Expect(await _magpie.Http.PutAsync($"indexes/{freshMap}", Json(MapDefinition)), HttpStatusCode.NoContent);
        await Expect(await _magpie.Http.PutAsync($"indexes/{freshTotals}", Json(TotalsDefinition)), HttpStatusCode.NoContent);
        var mismatches = 0;
        var median = Interlocked.Read(ref _counter) / 2;
        for (var g = 0; g < Groups; g++)
            foreach (var where in new[] { $"Group = 'g{g}'", $"Group = 'g{g}' and N >= {median}" })
                if (await CountAsync(Map, where) != await CountAsync(freshMap, where)) mismatches++;
        var live = await RowsAsync(Totals);
        var fresh = await RowsAsync(freshTotals);
        mismatches += live.Except(fresh).Count() + fresh.Except(live).Count();
        await _magpie.Http.DeleteAsync($"indexes/{freshMap}");
        await _magpie.Http.DeleteAsync($"indexes/{freshTotals}");
        return mismatches;
    }

    private async Task<long> CountAsync(string index, string where)
    {
        var r = await _magpie.Http.PostAsJsonAsync("queries", new { query = $"from index '{index}' where {where}", pageSize = 1, waitForNonStaleResults = true, timeoutMs = 120_000 });
        await Expect(r, HttpStatusCode.OK);
        return (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("totalResults").GetInt64();
    }

    private async Task<HashSet<string>> RowsAsync(string index)
    {
        var r = await _magpie.Http.PostAsJsonAsync("queries", new { query = $"from index '{index}' order by Group select Group, Count, Sum", pageSize = 1000, waitForNonStaleResults = true, timeoutMs = 120_000 });
        await Expect(r, HttpStatusCode.OK);
        return (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("results").EnumerateArray().Select(e => e.GetRawText()).ToHashSet();
    }

    private Dictionary<string, long> RabbitFinals()
    {
        var finals = new Dictionary<string, long>();
        foreach (var m in _queue.Received)
        {
            var at = m.MessageId!.LastIndexOf('@');
            var (id, etag) = (m.MessageId[..at], long.Parse(m.MessageId[(at + 1)..]));
            finals[id] = Math.Max(finals.GetValueOrDefault(id), etag);
        }
        return finals;
    }

    /// <summary>Final versions (id@etag now in the store) not yet seen downstream, waiting up to two minutes for them.</summary>
    private async Task<int> MissingAsync(Dictionary<string, long> finals, Func<Dictionary<string, long>> seen, string where)
    {
        var deadline = DateTime.UtcNow.AddMinutes(2);
        while (true)
        {
            var now = seen();
            var missing = finals.Count(f => now.GetValueOrDefault(f.Key) < f.Value);
            if (missing == 0 || DateTime.UtcNow > deadline)
            {
                if (missing > 0) _log($"{missing} final versions never reached {where}");
                return missing;
            }
            await Task.Delay(250);
        }
    }

    private static StringContent Json(string json) => new(json, Encoding.UTF8, "application/json");

    private static async Task Expect(HttpResponseMessage r, HttpStatusCode status)
    {
        if (r.StatusCode != status) throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri}: expected {(int)status}, got {(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
    }

    public static string Table(IEnumerable<Round> rounds)
    {
        var text = new StringBuilder();
        text.AppendLine($"{"round",5} {"fault",-13} {"acked",8} {"writes/s",9} {"lost",5} {"index≠",7} {"mq miss",8} {"sub miss",9} {"mq dup",7} {"sub dup",8} {"recovery",9}");
        foreach (var r in rounds)
            text.AppendLine($"{r.Number,5} {r.Fault,-13} {r.WritesAcknowledged,8:N0} {r.WritesPerSecond,9:N0} {r.Lost,5} {r.IndexMismatches,7} {r.MissingInRabbitMq,8} {r.MissingInSubscription,9} {r.DuplicatesRabbitMq,7:N0} {r.DuplicatesSubscription,8:N0} {r.RecoverySeconds,7:F2} s");
        return text.ToString();
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        try { await Task.WhenAll(_writer ?? Task.CompletedTask, _subscription ?? Task.CompletedTask).WaitAsync(TimeSpan.FromSeconds(30)); }
        catch (Exception) { }
        await _queue.DisposeAsync();
        await _magpie.DisposeAsync();
        await _rabbit.DisposeAsync();
    }
}
