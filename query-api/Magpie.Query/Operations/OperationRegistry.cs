using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using System.Text.Json;
using Magpie.Contracts;
using Magpie.Contracts.Documents;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Contracts.Storage;
using Magpie.Query.Rql;
using Magpie.Query.Shards;
using Magpie.Scripting;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Query.Operations;

/// <summary>An operation as <c>GET /operations/{id}</c> shows it.</summary>
public sealed record OperationStatus(string Id, string Query, string State, DateTimeOffset StartedAt, DateTimeOffset? EndedAt, OperationProgress Progress,
    string? Error);

/// <summary>
/// Set-based operations (update and delete by query), by id. Each is kept in <c>{dataDir}/operations/{id}.json</c> from the moment
/// it is accepted until it ends; one still running when the process stopped (a crash, a kill -9) is started again at the next start
/// under the same id, and the marks it left on the documents it updated let it skip them (<see cref="QueryOperation"/>). At most
/// <see cref="MaxRunning"/> run at once; ended ones are kept for <see cref="KeptFor"/>.
/// </summary>
public sealed class OperationRegistry(string dataDir, QueryCoordinator coordinator, IDocumentWriter? writer, IDocumentLookup? documents, ILogger log,
    IDocumentFilters? filters = null, IIndexDefinitions? definitions = null)
    : IHostedService
{
    public const int MaxRunning = 4;
    public static readonly TimeSpan KeptFor = TimeSpan.FromHours(1);

    private readonly string _directory = Path.Combine(dataDir, "operations");
    private readonly ConcurrentDictionary<string, Running> _operations = new();

    private sealed class Running(OperationRequest request, RqlQuery query, DateTimeOffset startedAt)
    {
        public OperationRequest Request { get; } = request;
        public RqlQuery Query { get; } = query;
        public DateTimeOffset StartedAt { get; } = startedAt;
        public CancellationTokenSource Stop { get; } = new();
        public QueryOperation? Operation;
        public string State = "running";
        public string? Error;
        public DateTimeOffset? EndedAt;
    }

    private readonly CancellationTokenSource _stopping = new();

    /// <summary>Operations left running when the process stopped, started again (before the server answers: a GET finds them).</summary>
    public Task StartAsync(CancellationToken ct)
    {
        if (!Directory.Exists(_directory)) return Task.CompletedTask;
        foreach (var file in Directory.EnumerateFiles(_directory, "*.json"))
        {
            try
            {
                var request = JsonSerializer.Deserialize<OperationRequest>(File.ReadAllBytes(file), WireJson.Web)!;
                log.LogInformation("operation {Id}: resumed after a restart", request.OperationId);
                Start(request, Parse(request), DateTimeOffset.UtcNow, persist: false, _stopping.Token);
            }
            catch (Exception e) when (e is JsonException or QueryProblem or IOException)
            {
                log.LogError("operation file {File} cannot be resumed ({Error}); it is left as it is", file, e.Message);
            }
        }
        return Task.CompletedTask;
    }

    /// <summary>Operations still running stop here; their files stay, so the next start resumes them.</summary>
    public Task StopAsync(CancellationToken ct)
    {
        _stopping.Cancel();
        return Task.CompletedTask;
    }

    /// <summary>Accepts an operation (validated: it parses, its update compiles) and starts it; an id already known attaches to that one.</summary>
    public OperationStatus Start(OperationRequest request)
    {
        if (writer is null || documents is null)
            throw new QueryProblem(ErrorKind.Unavailable, "update and delete by query write through the document store: run them where ingest runs (embedded), or give the query process MAGPIE__INGESTURL");
        if (request.OperationId is { } given && _operations.TryGetValue(given, out var known)) return StatusOf(given, known);
        if (request.OperationId is { } bad && !IdPattern(bad)) throw new QueryProblem(ErrorKind.Invalid, "operationId: 1-64 letters, digits, '-' or '_'");
        if (request.StaleTimeoutMs is < 0 or > 300_000) throw new QueryProblem(ErrorKind.Invalid, "staleTimeoutMs must be 0 to 300000");
        var query = Parse(request);
        if (_operations.Count(o => o.Value.State == "running") >= MaxRunning)
            throw new QueryProblem(ErrorKind.Busy, $"{MaxRunning} operations are running; wait for one to end or cancel one (DELETE /operations/{{id}})");
        request = request with { OperationId = request.OperationId ?? Guid.NewGuid().ToString("N") };
        var running = Start(request, query, DateTimeOffset.UtcNow, persist: true, _stopping.Token);
        return StatusOf(request.OperationId!, running);
    }

    public OperationStatus? Get(string id) => _operations.TryGetValue(id, out var r) ? StatusOf(id, r) : null;

    public IReadOnlyList<OperationStatus> All() => _operations.Select(o => StatusOf(o.Key, o.Value)).OrderBy(o => o.StartedAt).ToList();

    /// <summary>Cancels a running operation (what it wrote stays written); false when there is no such operation.</summary>
    public bool Cancel(string id)
    {
        if (!_operations.TryGetValue(id, out var r)) return false;
        r.Stop.Cancel();
        return true;
    }

    private RqlQuery Parse(OperationRequest request)
    {
        var query = LocalShardOwner.Parse(request.Query, request.Parameters, null);
        if (!query.IsOperation) throw new QueryProblem(ErrorKind.Invalid, "an operation's query ends in update { … } or delete: from Posts where Score < 0 delete");
        if (query.Update is not null) _ = new ScriptPatch(query, ScriptLimits.Default);   // compiles now: a syntax error is the request's 400
        return query;
    }

    private Running Start(OperationRequest request, RqlQuery query, DateTimeOffset startedAt, bool persist, CancellationToken stop)
    {
        var id = request.OperationId!;
        var running = new Running(request, query, startedAt);
        if (!_operations.TryAdd(id, running)) return _operations[id];
        if (persist)
        {
            Directory.CreateDirectory(_directory);
            DurableFile.Write(FileOf(id), JsonSerializer.SerializeToUtf8Bytes(request, WireJson.Web));
        }
        _ = Task.Run(() => RunAsync(id, running, stop));
        return running;
    }

    private async Task RunAsync(string id, Running r, CancellationToken hostStop)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(r.Stop.Token, hostStop);
        try
        {
            r.Operation = new QueryOperation(id, r.Query, writer!, documents!, ScriptLimits.Default, OperationCondition.For(r.Query, r.Request.Parameters, filters, definitions));
            await r.Operation.RunAsync(MatchesAsync(r, stop.Token), stop.Token);
            End(id, r, "completed", null);
        }
        catch (OperationCanceledException) when (r.Stop.IsCancellationRequested) { End(id, r, "cancelled", null); }
        catch (OperationCanceledException) when (hostStop.IsCancellationRequested) { }   // the process stops: resumed at the next start
        catch (Exception e) when (e is QueryProblem or Magpie.Http.IngestUnavailableException) { End(id, r, "failed", e.Message); }
        catch (Exception e)
        {
            log.LogError(e, "operation {Id} failed", id);
            End(id, r, "failed", e.Message);
        }
    }

    /// <summary>The matching documents, page by page, from one snapshot of the index (waiting for it to catch up unless allowed stale).</summary>
    private async IAsyncEnumerable<IReadOnlyList<JsonElement>> MatchesAsync(Running r, [EnumeratorCancellation] CancellationToken ct)
    {
        var request = new CoordinatorRequest
        {
            Query = r.Query.ReadText!, Parameters = r.Request.Parameters, WaitForNonStaleResults = !r.Request.AllowStale, TimeoutMs = r.Request.StaleTimeoutMs,
        };
        var read = r.Query with { Update = null, Delete = false };
        await using var stream = await coordinator.StreamAsync(request, read, ct);
        if (!r.Request.AllowStale && stream.IsStale)
            throw new QueryProblem(ErrorKind.Conflict, $"the index was still stale after {r.Request.StaleTimeoutMs} ms; send allowStale: true to run on it as it is, or a longer staleTimeoutMs");
        await foreach (var page in stream.PagesAsync(ct)) yield return page.Hits.Select(h => h.Result).ToList();
    }

    private void End(string id, Running r, string state, string? error)
    {
        (r.State, r.Error, r.EndedAt) = (state, error, DateTimeOffset.UtcNow);
        try { File.Delete(FileOf(id)); } catch (IOException) { }
        log.LogInformation("operation {Id}: {State}{Error}", id, state, error is null ? "" : $" ({error})");
        foreach (var (old, o) in _operations)
            if (o.EndedAt is { } ended && DateTimeOffset.UtcNow - ended > KeptFor) _operations.TryRemove(old, out _);
    }

    private string FileOf(string id) => Path.Combine(_directory, id + ".json");

    private static OperationStatus StatusOf(string id, Running r) =>
        new(id, r.Request.Query, r.State, r.StartedAt, r.EndedAt, r.Operation?.Progress ?? new OperationProgress(0, 0, 0, 0, []), r.Error);

    private static bool IdPattern(string id) => id.Length is > 0 and <= 64 && id.All(c => char.IsAsciiLetterOrDigit(c) || c is '-' or '_');
}
