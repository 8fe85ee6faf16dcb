using Magpie.Contracts;
using Magpie.Ingest.Documents;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Changes;

/// <param name="Interval">How often to look (the first look is one interval after start, once the readers have registered).</param>
/// <param name="MinBytes">Compact only when at least this much reclaimable log (superseded versions, deletes) lies behind every reader.</param>
public sealed record CompactionOptions(RevisionRetention Retention, TimeSpan Interval, long MinBytes);

/// <summary>
/// Keeps the change log bounded: every <see cref="CompactionOptions.Interval"/>, when enough of the log lies behind every
/// registered reader (<see cref="ChangeLogReaders"/>), copies forward what the retention keeps of that prefix, waits until
/// every reader has durably passed the copies, then truncates the prefix. A reader that stops advancing (an errored index, a
/// subscription nobody acknowledges) holds it back, and <see cref="Status"/> says which.
/// </summary>
public sealed class ChangeLogCompactor(DocumentStore store, ChangeLogReaders readers, CompactionOptions options, ILogger<ChangeLogCompactor> log)
    : BackgroundService
{
    private CompactionPass? _last;
    private DateTimeOffset? _lastAt;
    private long _passes, _reclaimedBytes;
    private string? _waitingFor;
    /// <summary>The last look that found too little to reclaim: the next waits until the prefix has grown enough to change that.</summary>
    private CompactionPass? _skipped;

    public object Status() => new
    {
        beginAddress = store.LogBeginAddress,
        tailAddress = store.LogTailAddress,
        passes = Interlocked.Read(ref _passes),
        reclaimedBytes = Interlocked.Read(ref _reclaimedBytes),
        lastPass = _lastAt,
        lastCopiedDocuments = _last?.Documents,
        waitingFor = _waitingFor,
        readers = readers.All().Select(r => new { name = r.Name, address = r.Address }),
    };

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        while (!stoppingToken.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(options.Interval, stoppingToken);
                await RunOnceAsync(stoppingToken);
            }
            catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested) { }
            catch (ObjectDisposedException) when (stoppingToken.IsCancellationRequested) { }
            catch (Exception e) { log.LogError(e, "change log compaction failed; trying again in {Interval}", options.Interval); }
        }
    }

    /// <summary>One pass, if enough reclaimable log lies behind every reader: copy, wait for the readers to pass the copies, truncate. True if it truncated.</summary>
    public async Task<bool> RunOnceAsync(CancellationToken ct)
    {
        var begin = store.LogBeginAddress;
        var until = Math.Min(readers.Lowest()?.Address ?? long.MaxValue, store.LogTailAddress);
        if (until - begin < Math.Max(1, options.MinBytes)) return false;   // cannot hold that much to reclaim
        // A look reads the whole prefix. After one that found too little, look again only once the prefix has grown by a
        // quarter of the shortfall: each new byte can add about one reclaimable byte (itself superseded, or superseding an old
        // one), so a smaller growth rarely tips it, and a steady writer no longer pays a full scan every interval.
        if (_skipped is { } last && last.Until >= begin && until - last.Until < Math.Max(last.LiveBytes - last.DeadBytes, options.MinBytes - last.DeadBytes) / 4)
            return false;
        var pass = await store.CompactAsync(until, options.Retention, options.MinBytes, ct);
        _skipped = pass.Skipped ? pass : null;
        if (pass.Skipped) return false;
        var waitingSince = DateTime.UtcNow;
        await Waits.UntilAsync(() =>
        {
            if (readers.Lowest() is not { } lowest || lowest.Address >= pass.CopiesEnd) return true;
            _waitingFor = lowest.Reader;
            if (DateTime.UtcNow - waitingSince > TimeSpan.FromMinutes(1))
            {
                log.LogInformation("change log compaction waits for {Reader} (at {Address}) to pass {End}", lowest.Reader, lowest.Address, pass.CopiesEnd);
                waitingSince = DateTime.UtcNow;
            }
            return false;
        }, Timeout.InfiniteTimeSpan, ct, poll: TimeSpan.FromMilliseconds(200));
        _waitingFor = null;
        await store.TruncateUntilAsync(pass.Until);
        _last = pass;
        _lastAt = DateTimeOffset.UtcNow;
        Interlocked.Increment(ref _passes);
        Interlocked.Add(ref _reclaimedBytes, pass.Until - begin - pass.CopiedBytes);
        return true;
    }
}
