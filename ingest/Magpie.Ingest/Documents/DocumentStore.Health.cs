namespace Magpie.Ingest.Documents;

/// <summary>Whether the store can take a write now, for <c>/readyz</c>.</summary>
public sealed partial class DocumentStore
{
    /// <summary>
    /// Null when a write would be taken, else why not: the store is shut or its directory refuses a small durable write
    /// (read-only, full, gone). The probe writes and flushes 4 KB beside the log, as a commit would.
    /// </summary>
    public async Task<string?> WriteProblemAsync(CancellationToken ct)
    {
        if (_disposed != 0) return "the document store is closed";
        var probe = Path.Combine(_options.Directory, ".write-probe");
        try
        {
            await using (var file = new FileStream(probe, FileMode.Create, FileAccess.Write, FileShare.None, 4096, FileOptions.WriteThrough))
            {
                await file.WriteAsync(new byte[4096], ct);
                file.Flush(flushToDisk: true);
            }
            File.Delete(probe);
            return null;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            try { File.Delete(probe); } catch (IOException) { }
            return $"the data directory {_options.Directory} refuses writes: {e.Message}";
        }
    }
}
