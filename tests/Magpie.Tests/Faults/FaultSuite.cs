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
/// Tries hard to lose data: steady writers of numbered documents record every acknowledged write (HTTP PUTs; in Kafka mode
/// also messages on magpie.documents the broker acknowledged) while a map index, a map/reduce index, a RabbitMQ ETL task and a
/// subscription (a .NET SubscriptionWorker) run; then rounds of faults — kill -9 of a process (embedded: `all`; Kafka mode:
/// ingest, one indexer of two, query, sinks), the Kafka broker or RabbitMQ stopped for a while. After each round, with the
/// writers paused: every acknowledged write is in the store; the map and map/reduce indexes answer exactly as a fresh rebuild
/// of the same definitions; every final version (id@etag) reached RabbitMQ and the subscription.
/// No xunit here: the benchmark runner links it for long runs (`bench … faults --rounds N`).
/// </summary>
public sealed class FaultSuite : IAsyncDisposable
{
    public enum Fault { KillAll, RabbitMqDown, KillIngest, KillIndexer, KillQuery, KillSinks, KafkaDown }

    public static readonly Fault[] EmbeddedFaults = [Fault.KillAll, Fault.RabbitMqDown, Fault.KillAll];
    public static readonly Fault[] KafkaFaults = [Fault.KillIngest, Fault.KillIndexer, Fault.KillQuery, Fault.KillSinks, Fault.KafkaDown, Fault.RabbitMqDown];

    /// <param name="RecoverySeconds">From the end of the fault (process restarted, broker back) until writes are acknowledged
    /// again (kill) or every final version reached RabbitMQ (broker outage).</param>
    /// <param name="WritesDuringOutage">HTTP writes acknowledged while the Kafka broker was down (the store does not need it).</param>
    /// <param name="IndexMismatches">Map index answers (per group, and a range) that differ between the live index, a fresh rebuild and the store.</param>
    /// <param name="ReduceMismatches">Map/reduce rows of the live index or the fresh rebuild that differ from the store's totals.</param>
    public sealed record Round(int Number, Fault Fault, long WritesAcknowledged, double WritesPerSecond, int Lost, int IndexMismatches, int ReduceMismatches,
        int MissingInRabbitMq, int MissingInSubscription, long DuplicatesRabbitMq, long DuplicatesSubscription, double RecoverySeconds, long WritesDuringOutage = 0);

    private const int Ids = 3_000, Groups = 20;
    private const string Map = "Faults/ByGroup", Totals = "Faults/Totals";
    private static readonly string MapDefinition = """{ "maps": ["map('Faults', d => ({ Group: d.group, N: d.n }))"] }""";
    private static readonly string TotalsDefinition = """
        { "maps": ["map('Faults', d => ({ Group: d.group, Count: 1, Sum: d.n }))"],
          "reduce": "groupBy(x => x.Group).aggregate(g => ({ Group: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0), Sum: g.values.reduce((s, v) => s + v.Sum, 0) }))" }
        """;

    private readonly RabbitMqBroker _rabbit;
    private readonly KafkaBroker? _kafka;
    private readonly Dictionary<string, MagpieProcess> _processes;
    private readonly QueueReader _queue;
    private readonly Action<string> _log;
    private readonly ConcurrentDictionary<string, long> _acknowledged = new();
    private readonly ConcurrentDictionary<string, long> _topicAcknowledged = new();   // id → highest n the broker acknowledged
    private readonly ConcurrentDictionary<string, long> _subscribed = new();
    private readonly ConcurrentDictionary<string, int> _subscribedCount = new();
    private readonly ConcurrentDictionary<int, long> _refused = new();
    private readonly CancellationTokenSource _stop = new();
    private long _writes, _counter, _inFlight;
    private volatile bool _paused;
    private Task? _writer, _subscription;
    private int _freshIndexes;

    private FaultSuite(RabbitMqBroker rabbit, KafkaBroker? kafka, Dictionary<string, MagpieProcess> processes, QueueReader queue, Action<string> log) =>
        (_rabbit, _kafka, _processes, _queue, _log) = (rabbit, kafka, processes, queue, log);

    // Who does what: one `all` process embedded; in Kafka mode ingest takes writes, indexer-a takes definitions, query answers.
    private MagpieProcess Writes => _processes.GetValueOrDefault("all") ?? _processes["ingest"];
    private MagpieProcess Queries => _processes.GetValueOrDefault("all") ?? _processes["query"];
    private MagpieProcess Definitions => _processes.GetValueOrDefault("all") ?? _processes["indexer-a"];
    private MagpieProcess Sinks => _processes.GetValueOrDefault("all") ?? _processes["sinks"];

    /// <param name="kafka">Kafka mode: a broker of its own and the targets as separate processes (two indexers).</param>
    public static async Task<FaultSuite> StartAsync(Action<string> log, bool kafka = false)
    {
        var rabbit = await RabbitMqBroker.StartOwnedAsync();
        var queue = await QueueReader.StartAsync(rabbit.Url, "faults-q", "faults");
        var broker = kafka ? await KafkaBroker.StartOwnedAsync() : null;
        var processes = new Dictionary<string, MagpieProcess>();
        if (broker is null) processes["all"] = await MagpieProcess.StartAsync();
        else
            foreach (var (name, target) in new[] { ("ingest", "ingest"), ("indexer-a", "indexer"), ("indexer-b", "indexer"), ("query", "query"), ("sinks", "sinks") })
                processes[name] = await MagpieProcess.StartAsync(broker.BootstrapServers, target: target);
        var suite = new FaultSuite(rabbit, broker, processes, queue, log);
        await suite.SetUpAsync();
        return suite;
    }

    private async Task SetUpAsync()
    {
        await Expect(await Definitions.Http.PutAsync($"indexes/{Map}", Json(MapDefinition)), HttpStatusCode.NoContent);
        await Expect(await Definitions.Http.PutAsync($"indexes/{Totals}", Json(TotalsDefinition)), HttpStatusCode.NoContent);
        var http = Sinks.Http;
        await Expect(await http.PutAsJsonAsync("etl/connections/rabbit", new { type = "rabbitmq", url = _rabbit.Url }), HttpStatusCode.NoContent);
        await Expect(await http.PutAsJsonAsync("etl/tasks/faults", new
        {
            connection = "rabbit",
            transforms = new[] { new { collections = new[] { "Faults" }, script = "loadTo('faults', { Id: id(this), N: this.n });" } },
        }), HttpStatusCode.NoContent);
        await Expect(await Queries.Http.PostAsJsonAsync("subscriptions", new { name = "faults", query = "from Faults" }), HttpStatusCode.Created);
        // Four writers, as four clients would: new and updated documents; in Kafka mode a fifth publishes to magpie.documents.
        _writer = Task.WhenAll(Enumerable.Range(0, 4).Select(w => Task.Run(() => WriteAsync(w)))
            .Append(_kafka is null ? Task.CompletedTask : Task.Run(PublishAsync)));
        _subscription = Task.Run(SubscribeAsync);
    }

    /// <summary>Numbered documents, new and updated, as fast as they are acknowledged; a refused or unanswered write is not counted.</summary>
    private async Task WriteAsync(int writer)
    {
        var random = new Random(writer);
        using var http = new HttpClient { BaseAddress = Writes.BaseUrl, Timeout = TimeSpan.FromSeconds(10) };
        while (!_stop.IsCancellationRequested)
        {
            Interlocked.Increment(ref _inFlight);   // before the check: a pause that saw none in flight sees no write start after it
            if (_paused) { Interlocked.Decrement(ref _inFlight); await Task.Delay(50); continue; }
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
            finally { Interlocked.Decrement(ref _inFlight); }
        }
    }

    /// <summary>Messages on magpie.documents (ids of their own, "kfaults/…"), each counted once the broker acknowledged it.</summary>
    private async Task PublishAsync()
    {
        var random = new Random(99);
        using var producer = Magpie.Kafka.KafkaClients.BuildProducer<string, string>(Magpie.Kafka.KafkaClients.Producer(_kafka!.BootstrapServers, "fault-suite"),
            Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);   // "brokers are down" during the outage rounds is expected: not to stderr
        while (!_stop.IsCancellationRequested)
        {
            if (_paused) { await Task.Delay(50); continue; }
            var n = Interlocked.Increment(ref _counter);
            var id = $"kfaults/{random.Next(Ids / 3)}";
            try
            {
                await producer.ProduceAsync(Magpie.Contracts.Topics.Documents, new Confluent.Kafka.Message<string, string>
                {
                    Key = id, Value = $$$"""{"n":{{{n}}},"group":"g{{{n % Groups}}}","@metadata":{"@collection":"Faults"}}""",
                }, _stop.Token);
                _topicAcknowledged.AddOrUpdate(id, n, (_, e) => Math.Max(e, n));
                Interlocked.Increment(ref _writes);
            }
            catch (OperationCanceledException) { return; }
            catch (Confluent.Kafka.KafkaException) { await Task.Delay(50); }
        }
    }

    private async Task SubscribeAsync()
    {
        using var http = new HttpClient { BaseAddress = Queries.BaseUrl, Timeout = TimeSpan.FromSeconds(60) };
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
        long duringOutage = 0;
        switch (fault)
        {
            case Fault.KillAll or Fault.KillIngest or Fault.KillIndexer or Fault.KillQuery or Fault.KillSinks:
                var victim = _processes[fault switch
                {
                    Fault.KillAll => "all", Fault.KillIngest => "ingest", Fault.KillIndexer => "indexer-a", Fault.KillQuery => "query", _ => "sinks",
                }];
                victim.Crash();
                await Task.Delay(500);
                await victim.StartAsync();
                break;
            case Fault.RabbitMqDown:
                await _rabbit.StopAsync();
                await Task.Delay(outage);
                await _rabbit.RestartAsync();
                break;
            case Fault.KafkaDown:
                await _kafka!.StopAsync();
                var atStop = Interlocked.Read(ref _writes);
                await Task.Delay(outage);
                duringOutage = Interlocked.Read(ref _writes) - atStop;   // the topic writer is blocked: these are HTTP writes
                await _kafka.RestartAsync();
                break;
        }
        var recovery = Stopwatch.StartNew();
        var before = Interlocked.Read(ref _writes);
        while (Interlocked.Read(ref _writes) == before && recovery.Elapsed < TimeSpan.FromMinutes(2)) await Task.Delay(10);
        var recovered = recovery.Elapsed.TotalSeconds;
        await Task.Delay(TimeSpan.FromSeconds(3));
        var rate = (Interlocked.Read(ref _writes) - writesBefore) / clock.Elapsed.TotalSeconds;

        _paused = true;
        // The last writes answered (a slow one acknowledged after the check below would look lost); each times out within 10 s.
        var quiet = Stopwatch.StartNew();
        while (Interlocked.Read(ref _inFlight) > 0 && quiet.Elapsed < TimeSpan.FromSeconds(15)) await Task.Delay(20);
        var finals = await StoredAsync();
        var lostWrites = _acknowledged.Where(a => !finals.TryGetValue(a.Key, out var stored) || stored < a.Value).ToList();
        foreach (var (id, etag) in lostWrites.Take(5)) _log($"  acknowledged {id} at etag {etag}; the store has {(finals.TryGetValue(id, out var s) ? $"etag {s}" : "nothing")}");
        var lost = lostWrites.Count + await TopicLostAsync();
        await RelayCaughtUpAsync();
        var missingRabbit = await MissingAsync(finals, () => RabbitFinals(), "RabbitMQ");
        if (fault is Fault.RabbitMqDown or Fault.KillSinks) recovered = recovery.Elapsed.TotalSeconds;
        var missingSubscription = await MissingAsync(finals, () => new Dictionary<string, long>(_subscribed), "the subscription");
        var mismatches = await IndexMismatchesAsync();
        var received = await _queue.WaitForAsync(_ => true, TimeSpan.FromSeconds(1));
        var round = new Round(number, fault, Interlocked.Read(ref _writes), rate, lost, mismatches.Map, mismatches.Reduce, missingRabbit, missingSubscription,
            received.Count - received.Select(m => m.MessageId).Distinct().Count(), _subscribedCount.Values.Sum(c => c - 1L), recovered, duringOutage);
        _log($"round {number} ({fault}): {round}; writes refused so far: {string.Join(", ", _refused.Select(r => $"{r.Key}×{r.Value}"))}");
        // Map stages that took a partition over from what another attempt had published (the reduce rows above depend on it).
        foreach (var (name, process) in _processes)
            foreach (var line in process.Output.Where(l => l.Contains("taken over", StringComparison.Ordinal)).TakeLast(3))
                _log($"  {name}: {line}");
        _paused = false;
        return round;
    }

    /// <summary>id → etag now in the store of every document a write was acknowledged for (HEAD, as a client checks).</summary>
    private async Task<Dictionary<string, long>> StoredAsync()
    {
        var stored = new ConcurrentDictionary<string, long>();
        await Parallel.ForEachAsync(_acknowledged.Keys.Concat(_topicAcknowledged.Keys), new ParallelOptions { MaxDegreeOfParallelism = 16 }, async (id, ct) =>
        {
            using var r = await Writes.Http.SendAsync(new HttpRequestMessage(HttpMethod.Head, $"docs/{id}"), ct);
            if (r.StatusCode == HttpStatusCode.OK && r.Headers.ETag is { } etag) stored[id] = long.Parse(etag.Tag.Trim('"'));
        });
        return new Dictionary<string, long>(stored);
    }

    /// <summary>Topic writes not in the store (their n, or a later one) after the input consumer had two minutes to apply them.</summary>
    private async Task<int> TopicLostAsync()
    {
        var deadline = DateTime.UtcNow.AddMinutes(2);
        while (true)
        {
            var missing = 0;
            foreach (var (id, n) in _topicAcknowledged)
            {
                using var r = await Writes.Http.GetAsync($"docs/{id}");
                if (r.StatusCode != HttpStatusCode.OK || (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("n").GetInt64() < n) missing++;
            }
            if (missing == 0 || DateTime.UtcNow > deadline) return missing;
            await Task.Delay(500);
        }
    }

    /// <summary>Kafka mode: waitForNonStaleResults covers what is on magpie.changes, so first the relay publishes every write.</summary>
    private async Task RelayCaughtUpAsync()
    {
        if (_kafka is null) return;
        var deadline = DateTime.UtcNow.AddMinutes(2);
        while ((await Writes.Http.GetFromJsonAsync<JsonElement>("stats/pipeline")).GetProperty("relay").GetProperty("lagEtags").GetInt64() > 0
               && DateTime.UtcNow < deadline)
            await Task.Delay(50);
    }

    /// <summary>The live indexes against fresh ones with the same definitions, built from scratch now: per-group counts and
    /// ranges of the map index, and every row of the map/reduce index.</summary>
    private async Task<(int Map, int Reduce)> IndexMismatchesAsync()
    {
        var n = Interlocked.Increment(ref _freshIndexes);
        var (freshMap, freshTotals) = ($"Faults/FreshByGroup{n}", $"Faults/FreshTotals{n}");
        await Expect(await Definitions.Http.PutAsync($"indexes/{freshMap}", Json(MapDefinition)), HttpStatusCode.NoContent);
        await Expect(await Definitions.Http.PutAsync($"indexes/{freshTotals}", Json(TotalsDefinition)), HttpStatusCode.NoContent);
        // The truth, from the store itself: every document of the collection, paged by cursor.
        var docs = await AllDocumentsAsync();
        var mismatches = 0;
        var median = Interlocked.Read(ref _counter) / 2;
        for (var g = 0; g < Groups; g++)
            foreach (var (where, truth) in new[]
                     {
                         ($"Group = 'g{g}'", docs.LongCount(d => d.Group == $"g{g}")),
                         ($"Group = 'g{g}' and N >= {median}", docs.LongCount(d => d.Group == $"g{g}" && d.N >= median)),
                     })
            {
                var (live, fresh) = (await CountAsync(Map, where), await CountAsync(freshMap, where));
                if (live == fresh && live == truth) continue;
                mismatches++;
                _log($"  {where}: live index {live}, fresh rebuild {fresh}, store {truth}");
            }
        var reduceMismatches = 0;
        var totals = docs.GroupBy(d => d.Group).Select(g => JsonSerializer.Serialize(new { Group = g.Key, Count = g.LongCount(), Sum = g.Sum(d => d.N) })).ToHashSet();
        foreach (var (name, rows) in new[] { ("live", await RowsAsync(Totals)), ("fresh", await RowsAsync(freshTotals)) })
        {
            var wrong = rows.Except(totals).ToList();
            reduceMismatches += wrong.Count + totals.Except(rows).Count();
            foreach (var row in wrong.Take(3))
            {
                var group = JsonDocument.Parse(row).RootElement.GetProperty("Group").GetString();
                _log($"  {name} map/reduce row {row}; from the store: {totals.FirstOrDefault(t => t.Contains($"\"{group}\""))}");
            }
            if (name == "live" && wrong.Count > 0 && _kafka is not null)
            {
                foreach (var line in MappedTopicDiagnosis.Explain(_kafka.BootstrapServers, "Faults_Totals", docs.ToDictionary(d => d.Id, d => d.Group))) _log(line);
                foreach (var (process, p) in _processes.Where(p => p.Key.StartsWith("indexer", StringComparison.Ordinal)))
                    foreach (var line in p.Output.Where(l => l.Contains("owns partitions", StringComparison.Ordinal) || l.Contains("retrying", StringComparison.Ordinal)
                                 || l.Contains("warn", StringComparison.Ordinal) || l.Contains("fail", StringComparison.Ordinal) || l.Contains("taken over", StringComparison.Ordinal)).TakeLast(40))
                        _log($"  {process}: {line}");
            }
        }
        await Definitions.Http.DeleteAsync($"indexes/{freshMap}");
        await Definitions.Http.DeleteAsync($"indexes/{freshTotals}");
        return (mismatches, reduceMismatches);
    }

    private async Task<List<(string Id, string Group, long N)>> AllDocumentsAsync()
    {
        var docs = new List<(string, string, long)>();
        string? cursor = null;
        do
        {
            var page = await Writes.Http.GetFromJsonAsync<JsonElement>($"docs?collection=Faults&pageSize=1024{(cursor is null ? "" : $"&cursor={Uri.EscapeDataString(cursor)}")}");
            foreach (var d in page.GetProperty("results").EnumerateArray()) docs.Add((d.GetProperty("@metadata").GetProperty("@id").GetString()!, d.GetProperty("group").GetString()!, d.GetProperty("n").GetInt64()));
            cursor = page.GetProperty("nextCursor").GetString();
        } while (cursor is not null);
        return docs;
    }

    private async Task<long> CountAsync(string index, string where) =>
        (await NonStaleAsync($"from index '{index}' where {where}", 1)).GetProperty("totalResults").GetInt64();

    private async Task<HashSet<string>> RowsAsync(string index) =>
        (await NonStaleAsync($"from index '{index}' order by Group select Group, Count, Sum", 1000)).GetProperty("results").EnumerateArray().Select(e => e.GetRawText()).ToHashSet();

    /// <summary>A query answered from indexes caught up with every write; 503 (an indexer's partitions between owners after a
    /// kill -9, a new index not yet on every shard) and stale answers are asked again, for up to five minutes.</summary>
    private async Task<JsonElement> NonStaleAsync(string rql, int pageSize)
    {
        var deadline = DateTime.UtcNow.AddMinutes(5);
        var last = "";
        while (true)
        {
            using var r = await Queries.Http.PostAsJsonAsync("queries", new { query = rql, pageSize, waitForNonStaleResults = true, timeoutMs = 30_000 });
            if (r.StatusCode == HttpStatusCode.OK)
            {
                var body = await r.Content.ReadFromJsonAsync<JsonElement>();
                if (!body.GetProperty("isStale").GetBoolean()) return body;
                last = "200, isStale";
            }
            else if (r.StatusCode is not (HttpStatusCode.ServiceUnavailable or HttpStatusCode.NotFound)) await Expect(r, HttpStatusCode.OK);
            else last = $"{(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}";
            if (DateTime.UtcNow > deadline)
            {
                // What the processes last said about partitions and failures, in the message (CI keeps the top of a failure):
                // the only trace of why, once their temp dirs are gone.
                var said = _processes.SelectMany(p => p.Value.Output.Where(l => l.Contains("owns partitions", StringComparison.Ordinal)
                        || l.Contains("taken over", StringComparison.Ordinal) || l.Contains("warn", StringComparison.Ordinal) || l.Contains("fail", StringComparison.Ordinal))
                    .TakeLast(4).Select(l => $"{p.Key}: {(l.Length > 200 ? l[..200] : l)}"));
                throw new TimeoutException($"still stale or unavailable after 5 minutes: {rql}; the last answer: {(last.Length > 300 ? last[..300] : last)}" +
                    string.Concat(said.Select(l => "\n  " + l)) + $"\n  every process's output: {KeepOutputs()}");
            }
            await Task.Delay(200);
        }
    }

    /// <summary>Every process's whole output, written where it outlives the test's temp dirs (a local run can read it after a failure).</summary>
    private string KeepOutputs()
    {
        var dir = Path.Combine(Path.GetTempPath(), "magpie-fault-suite", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss"));
        Directory.CreateDirectory(dir);
        foreach (var (name, process) in _processes) File.WriteAllLines(Path.Combine(dir, name + ".log"), process.Output);
        return dir;
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
        text.AppendLine($"{"round",5} {"fault",-13} {"acked",8} {"writes/s",9} {"lost",5} {"map≠",5} {"reduce≠",8} {"mq miss",8} {"sub miss",9} {"mq dup",7} {"sub dup",8} {"recovery",9}");
        foreach (var r in rounds)
            text.AppendLine($"{r.Number,5} {r.Fault,-13} {r.WritesAcknowledged,8:N0} {r.WritesPerSecond,9:N0} {r.Lost,5} {r.IndexMismatches,5} {r.ReduceMismatches,8} {r.MissingInRabbitMq,8} {r.MissingInSubscription,9} {r.DuplicatesRabbitMq,7:N0} {r.DuplicatesSubscription,8:N0} {r.RecoverySeconds,7:F2} s");
        return text.ToString();
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        try { await Task.WhenAll(_writer ?? Task.CompletedTask, _subscription ?? Task.CompletedTask).WaitAsync(TimeSpan.FromSeconds(30)); }
        catch (Exception) { }
        await _queue.DisposeAsync();
        foreach (var p in _processes.Values) await p.DisposeAsync();
        await _rabbit.DisposeAsync();
        if (_kafka is not null) await _kafka.DisposeAsync();
    }
}
