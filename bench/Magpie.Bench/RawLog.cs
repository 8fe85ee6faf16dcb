using FASTER.core;
using Magpie.Producers;

namespace Magpie.Bench;

/// <summary>
/// The baseline: FasterLog with the store's settings, each batch enqueued and then waited on until a
/// commit covers it (concurrent batches share commits, as in the store).
/// </summary>
public sealed class RawLog : IDisposable
{
    private readonly FasterLogSettings _settings;
    private readonly FasterLog _log;

    public RawLog(string dir)
    {
        _settings = new FasterLogSettings(dir, deleteDirOnDispose: true)
        {
            PageSizeBits = 26, MemorySizeBits = 28, SegmentSizeBits = 30, LogChecksum = LogChecksumType.PerEntry, FastCommitMode = true,
        };
        _log = new FasterLog(_settings);
    }

    public async Task AppendDurableAsync(DocumentWrite[] batch)
    {
        foreach (var w in batch) _log.Enqueue(w.Body!);
        var tail = _log.TailAddress;
        _log.Commit(spinWait: false);
        await _log.WaitForCommitAsync(tail);
    }

    public void Dispose()
    {
        _log.Dispose();
        _settings.Dispose();
    }
}
