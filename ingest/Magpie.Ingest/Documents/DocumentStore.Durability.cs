using Magpie.Contracts.Changes;
using Microsoft.Extensions.Logging;

namespace Magpie.Ingest.Documents;

/// <summary>Durability: id-index checkpoints, recovery, and shutdown.</summary>
public sealed partial class DocumentStore
{
    private async Task CheckpointLoopAsync()
    {
        var ct = _stopping.Token;
        while (!ct.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(_options.CheckpointInterval, ct);
                if (Interlocked.Read(ref _writesSinceCheckpoint) > 0) await CheckpointAsync();
            }
            catch (OperationCanceledException) when (ct.IsCancellationRequested) { }
            catch (Exception e) { _logger.LogError(e, "id index checkpoint failed"); }
        }
    }

    /// <summary>
    /// Checkpoints FasterKV at a point where it reflects exactly the log before the current tail: writes
    /// are held for the duration, and the log is committed first so the index never points past a commit.
    /// </summary>
    public async Task CheckpointAsync()
    {
        await _writeLock.WaitAsync();
        try
        {
            var replayFrom = _log.TailAddress;
            await _log.CommitAsync();
            var token = await _index.CheckpointAsync();
            var sources = _sources.ToDictionary(kv => kv.Key, kv => new SourcePositionState(kv.Value.Next, kv.Value.Rejected.Order().ToArray()));
            new StoreState(token, replayFrom, _lastEtag, _collections.Save(), sources, _ledgers.Save()) { FoldedIds = true }.Save(_options.Directory);
            _index.RemoveCheckpointsExcept(token);
            _writesSinceCheckpoint = 0;
            _logger.LogDebug("id index checkpoint {Token} at log address {Address}", token, replayFrom);
        }
        finally { _writeLock.Release(); }
    }

    private async Task RecoverAsync()
    {
        var replayFrom = _log.BeginAddress;
        var rebuilding = _state is { FoldedIds: false };
        if (_state is { } state)
        {
            // Rebuilding: the whole log goes into a new index (and recounts the collections); positions and ledgers hold no ids.
            if (!rebuilding)
            {
                _index.Recover(state.CheckpointToken);
                _collections.Load(state.Collections);
                replayFrom = Math.Max(replayFrom, state.ReplayFrom);
            }
            foreach (var (source, position) in state.Sources ?? [])
                _sources[source] = new SourcePosition(position.Next, position.Rejected.ToHashSet());
            _ledgers.Load(state.Ledgers);
            _lastEtag = state.LastEtag;
        }
        var replayed = 0L;
        using (var iter = _log.Scan(replayFrom, _log.CommittedUntilAddress))
        {
            while (iter.GetNext(out byte[] entry, out var length, out var address, out _))
            {
                if (ChangeRecord.IsSourcePosition(entry.AsSpan(0, length)))
                {
                    ApplySourcePosition(entry.AsSpan(0, length));
                    continue;
                }
                if (ChangeRecord.IsMessageLedger(entry.AsSpan(0, length)))
                {
                    var ledger = ChangeRecord.Decode(entry.AsSpan(0, length));
                    _ledgers.Add(ledger.Id, MessageLedgers.Decode(ledger.Document));
                    continue;
                }
                if (ChangeRecord.IsRevision(entry.AsSpan(0, length))) continue;   // history kept by compaction, not a change
                var (op, id, collection, etag) = Header(entry.AsSpan(0, length));
                var before = await _index.TryGetAsync(id) is { } p ? _collections.NameOf(p.CollectionId) : null;
                ApplyToIndex(op, id, collection, etag, address, before);
                _lastEtag = Math.Max(_lastEtag, etag);
                replayed++;
            }
        }
        _writesSinceCheckpoint = replayed;
        _committedEtag = _lastEtag;
        if (rebuilding)
        {
            await CheckpointAsync();
            _logger.LogWarning("document store: its id index was rebuilt from the log to compare ids case-insensitively ({Documents} documents)", _collections.Total);
        }
        _logger.LogInformation("document store recovered: {Documents} documents, last etag {Etag}, {Replayed} log entries replayed",
            _collections.Total, _lastEtag, replayed);
    }

    private static (ChangeOp, string, string, long) Header(ReadOnlySpan<byte> entry)
    {
        var r = ChangeRecord.Decode(entry);
        return (r.Op, r.Id, r.Collection, r.Etag);
    }

    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
        _stopping.Cancel();
        await _checkpointer.ContinueWith(_ => { });
        try
        {
            if (_writesSinceCheckpoint > 0) await CheckpointAsync();
            else
            {
                await _writeLock.WaitAsync();   // never commit a half-enqueued batch
                try { await _log.CommitAsync(); }
                finally { _writeLock.Release(); }
            }
        }
        catch (Exception e) { _logger.LogError(e, "final checkpoint failed; recovery will replay the log"); }
        _index.Dispose();
        _log.Dispose();
        _logSettings.Dispose();
    }
}
