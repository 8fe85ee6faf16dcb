using System.Text.Json;
using Magpie.Contracts;
using Magpie.Contracts.Changes;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Indexing;

/// <summary>
/// An index's failing documents: kept beside the index after each commit and read back when it resumes, and retried on request —
/// the attempt ends, the worker resumes from its commit and maps the failed documents' latest versions before the feed goes on.
/// </summary>
public sealed partial class IndexWorker
{
    /// <summary>The current attempt's stop: a retry of failed documents (<see cref="Retry"/>) ends it, and the next attempt retries them first.</summary>
    private CancellationTokenSource? _attempt;
    private IReadOnlySet<string>? _retry;
    /// <summary>Raised with a retry: a worker waiting out a failure's back-off starts its next attempt at once.</summary>
    private readonly Signal _retried = new();

    /// <summary>
    /// Maps the documents that failed (kept across restarts) again, as they are now, without a rebuild: the worker resumes from its
    /// last commit, runs them through the stage first, then goes on with the feed — an errored index whose retried documents pass
    /// runs on. Returns how many documents are retried (reduce keys are retried by their next change).
    /// </summary>
    public int Retry()
    {
        var ids = Status.Failures().Ids.Where(id => !id.StartsWith(ReduceKeyPrefix, StringComparison.Ordinal)).ToHashSet(StringComparer.Ordinal);
        if (ids.Count == 0) return 0;
        Volatile.Write(ref _retry, ids);
        try { _attempt?.Cancel(); } catch (ObjectDisposedException) { }
        _retried.Raise();
        return ids.Count;
    }

    /// <summary>How a reduce key's error is named (not a document: a retry cannot read it).</summary>
    public const string ReduceKeyPrefix = "reduce key ";

    /// <summary>
    /// The latest change, up to <paramref name="position"/>, of each document to retry: the feed read from its start (a retry is
    /// rare and asked for; the feed is what this worker can read in either mode), as one batch to run before the feed goes on.
    /// </summary>
    private async Task<ChangeBatch?> RetriedAsync(IReadOnlySet<string> ids, ChangeFeedPosition position, CancellationToken ct)
    {
        var latest = new Dictionary<string, ChangeEvent>(StringComparer.Ordinal);
        if (!position.Next.All(p => p.Value <= 0))
            await foreach (var batch in feed.ReadAsync(ChangeFeedPosition.Beginning, batchSize, ct))
            {
                foreach (var change in batch.Changes)
                    if (ids.Contains(change.Id)) latest[change.Id] = change;
                if (Reached(batch.After, position.Next)) break;
            }
        log.LogInformation("index {Index}: retrying {Count} failed documents ({Found} found in the feed)", name, ids.Count, latest.Count);
        // Not found any more (compacted away as deleted): no longer an error.
        foreach (var id in ids.Where(id => !latest.ContainsKey(id))) Status.Cleared(id);
        return latest.Count == 0 ? null : new ChangeBatch([.. latest.Values.OrderBy(c => c.Etag)], position);
    }

    /// <summary>The documents failing now, kept beside the index after each commit (a restart that resumes from the commit reads them back).</summary>
    private string FailuresFile => Path.Combine(directory, "errors.json");

    private long _savedFailures = -1;

    private void SaveFailures()
    {
        var set = Status.Failures();
        if (set.Version == _savedFailures) return;
        try
        {
            Contracts.Storage.DurableFile.Write(FailuresFile, JsonSerializer.SerializeToUtf8Bytes(new KeptFailures(set.Failures, set.Unkept, set.Attempts), WireJson.Web));
            _savedFailures = set.Version;
        }
        catch (IOException e) { log.LogWarning("index {Index}: its errors could not be kept beside it: {Error}", name, e.Message); }
    }

    /// <summary>What errors.json holds. Files written before unkept ids were kept hold only a count, which is not trusted: it counted repeats.</summary>
    private sealed record KeptFailures(IReadOnlyList<IndexError> Failures, IReadOnlyList<string>? Unkept, long Attempts);

    private void RestoreFailures(bool rebuilt)
    {
        KeptFailures? kept = null;
        if (!rebuilt && File.Exists(FailuresFile))
            try { kept = JsonSerializer.Deserialize<KeptFailures>(File.ReadAllBytes(FailuresFile), WireJson.Web); }
            catch (JsonException e) { log.LogWarning("index {Index}: its kept errors are unreadable ({Error}); starting without them", name, e.Message); }
        Status.Restore(kept?.Failures ?? [], kept?.Unkept ?? [], kept?.Attempts ?? 0);
        _savedFailures = -1;
    }
}
