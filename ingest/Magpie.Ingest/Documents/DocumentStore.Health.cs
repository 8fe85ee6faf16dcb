using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Documents;

/// <summary>The data directory cannot hold a store at all (read-only, full, not a directory): Magpie says so in one line and exits.</summary>
public sealed class StoreUnavailableException(string message) : IOException(message);

/// <summary>The store cannot take the write for lack of space (HTTP 507): nothing of it was written.</summary>
public sealed class StoreFullException(string message) : IOException(message), Magpie.Http.IStatusException
{
    public int StatusCode => 507;
}

/// <summary>
/// Storage health: whether the store can take a write now (<c>/readyz</c>), and the free-space check every write passes
/// before it touches the log. FasterLog does not recover from a failed flush (its commits keep failing after space
/// returns), so a full disk must be found before FASTER meets it.
/// </summary>
public sealed partial class DocumentStore
{
    private string? _storageFailure;

    /// <summary>Why a store cannot be opened in <paramref name="options"/>' directory (null: it can), found before FASTER meets it.</summary>
    public static string? Unusable(DocumentStoreOptions options)
    {
        for (var at = Path.GetFullPath(options.Directory); at is not null; at = Path.GetDirectoryName(at))
            if (File.Exists(at)) return $"{at} is a file, not a directory";
        if (RefusedWrite(options.Directory) is { } refused) return refused;
        var free = new DriveInfo(options.Directory).AvailableFreeSpace;
        return free < options.MinFreeDiskBytes ? $"only {free:N0} bytes free, under the {options.MinFreeDiskBytes:N0} kept in reserve (Magpie:MinFreeDiskMegabytes)" : null;
    }

    /// <summary>Null when <paramref name="directory"/> (created if missing) takes a durable 4 KB write, as a commit would; else why not (read-only, full, gone).</summary>
    private static string? RefusedWrite(string directory)
    {
        var probe = Path.Combine(directory, ".write-probe");
        try
        {
            Directory.CreateDirectory(directory);
            using (var file = new FileStream(probe, FileMode.Create, FileAccess.Write, FileShare.None, 4096, FileOptions.WriteThrough))
            {
                file.Write(new byte[4096]);
                file.Flush(flushToDisk: true);
            }
            File.Delete(probe);
            return null;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            try { File.Delete(probe); } catch (Exception cleanup) when (cleanup is IOException or UnauthorizedAccessException) { }
            return e.Message;
        }
    }

    /// <summary>Refuses a write of <paramref name="bytes"/> that would leave less than the reserve free (or any write after a failed commit).</summary>
    private void EnsureSpace(long bytes)
    {
        if (_storageFailure is { } failure) throw new StoreFullException(failure);
        var free = new DriveInfo(_options.Directory).AvailableFreeSpace;
        if (free - bytes < _options.MinFreeDiskBytes)
            throw new StoreFullException($"the disk holding {_options.Directory} has {free:N0} bytes free; writes keep {_options.MinFreeDiskBytes:N0} in reserve. " +
                "Nothing was written; free space and retry");
    }

    /// <summary>A commit failed (the disk filled between the check and the flush, or failed): FasterLog cannot go on, so neither do writes.</summary>
    private StoreFullException CommitFailed(Exception e)
    {
        _storageFailure = $"a commit of the change log failed ({e.Message}); the store refuses writes until Magpie is restarted with space free";
        _logger.LogError("document store: {Failure}", _storageFailure);
        return new StoreFullException(_storageFailure);
    }

    /// <summary>
    /// Null when a write would be taken, else why not: the store is shut, a commit failed, the disk reserve is reached, or
    /// its directory refuses a small durable write (read-only, full, gone).
    /// </summary>
    public Task<string?> WriteProblemAsync(CancellationToken ct)
    {
        if (_disposed != 0) return Task.FromResult<string?>("the document store is closed");
        try { EnsureSpace(0); }
        catch (StoreFullException e) { return Task.FromResult<string?>(e.Message); }
        // A 4 KB write with write-through: short enough for the readiness probe's thread.
        return Task.FromResult(RefusedWrite(_options.Directory) is { } refused ? $"the data directory {_options.Directory} refuses writes: {refused}" : null);
    }
}
