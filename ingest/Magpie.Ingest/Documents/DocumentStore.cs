using System.Buffers;
using System.Numerics;
using FASTER.core;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Documents;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Magpie.Ingest.Documents;

/// <summary>
/// The durable document store. FasterLog is the change log and holds every version; FasterKV maps
/// id → latest <see cref="DocPointer"/>. A write is acknowledged only once the log commit covering it
/// is durable; concurrent writers share commits (group commit: each batch asks for a commit under the
/// write lock and FASTER folds requests made during a flush into the next one).
/// Etags are assigned in log order under one write lock, so they strictly increase.
/// Recovery: FasterLog recovers to its last commit, FasterKV to the checkpoint named in
/// <see cref="StoreState"/>, and the log after that checkpoint is replayed into FasterKV.
/// </summary>
public sealed partial class DocumentStore : IAsyncDisposable
{
    private readonly DocumentStoreOptions _options;
    private readonly ILogger _logger;
    private readonly FasterLogSettings _logSettings;
    private readonly FasterLog _log;
    private readonly DocumentIndex _index;
    private readonly CollectionCounts _collections = new();
    private readonly System.Collections.Concurrent.ConcurrentDictionary<string, SourcePosition> _sources = new(StringComparer.Ordinal);
    private readonly SemaphoreSlim _writeLock = new(1, 1);
    private readonly CancellationTokenSource _stopping = new();
    private readonly TimeProvider _clock;
    private Task _checkpointer = Task.CompletedTask;
    private long _lastEtag;
    private long _writesSinceCheckpoint;
    /// <summary>What the last checkpoint recorded, as the store opened (null: a new store).</summary>
    private readonly StoreState? _state;
    private int _disposed;

    private DocumentStore(DocumentStoreOptions options, ILogger logger, TimeProvider clock)
    {
        _options = options;
        _logger = logger;
        _clock = clock;
        Directory.CreateDirectory(options.Directory);
        var pageBits = Math.Max(22, BitOperations.Log2((uint)Math.Max(options.MaxDocumentBytes, 1)) + 2);
        var memoryBits = Math.Max(BitOperations.Log2((ulong)options.LogMemoryBytes), pageBits + 2);
        var logDir = Path.Combine(options.Directory, "log");
        _logSettings = new FasterLogSettings(logDir, deleteDirOnDispose: false)
        {
            PageSizeBits = pageBits,
            MemorySizeBits = memoryBits,
            SegmentSizeBits = SegmentBits(options.Directory, pageBits),
            LogChecksum = LogChecksumType.PerEntry,
            // Commit metadata goes into the log itself: one write per commit instead of a new metadata file each time.
            FastCommitMode = true,
            // Looking for a commit to recover in a new store cost half a second (a partition taken over opens one).
            TryRecoverLatest = System.IO.Directory.Exists(logDir) && System.IO.Directory.EnumerateFileSystemEntries(logDir).Any(),
        };
        _log = new FasterLog(_logSettings);
        // A store whose id index predates case-insensitive ids rebuilds it from the log (RecoverAsync): its old one goes first.
        _state = StoreState.Load(options.Directory);
        if (_state is { FoldedIds: false }) Directory.Delete(Path.Combine(options.Directory, "index"), recursive: true);
        _index = new DocumentIndex(Path.Combine(options.Directory, "index"), options);
    }

    /// <summary>
    /// Compaction frees whole segment files, so new stores use 256 MB segments; a store made before that keeps the 1 GB
    /// it was written with (FasterLog must reopen a log with the segment size it was written with).
    /// </summary>
    private static int SegmentBits(string directory, int pageBits)
    {
        var marker = Path.Combine(directory, "log.segment-bits");
        if (File.Exists(marker) && int.TryParse(File.ReadAllText(marker).Trim(), out var saved)) return saved;
        var bits = Directory.EnumerateFiles(directory, "log.*").Any() ? Math.Max(30, pageBits + 1) : Math.Max(28, pageBits + 1);
        File.WriteAllText(marker, bits.ToString());
        return bits;
    }

    public static async Task<DocumentStore> OpenAsync(DocumentStoreOptions options, ILogger? logger = null, TimeProvider? clock = null)
    {
        if (Unusable(options) is { } reason) throw new StoreUnavailableException($"cannot use the data directory {options.Directory}: {reason}");
        var store = new DocumentStore(options, logger ?? NullLogger.Instance, clock ?? TimeProvider.System);
        try
        {
            await store.RecoverAsync();
        }
        catch
        {
            await store.DisposeAsync();
            throw;
        }
        store._checkpointer = Task.Run(store.CheckpointLoopAsync);
        return store;
    }

    /// <summary>The FasterLog holding every change, for the change feed and the relay.</summary>
    internal FasterLog Log => _log;

    public long LastEtag => Interlocked.Read(ref _lastEtag);

    /// <summary>The newest etag whose commit has completed (every smaller one is committed too: commits go in log order).</summary>
    public long CommittedEtag => Interlocked.Read(ref _committedEtag);

    private long _committedEtag;

    public StoreStats Stats() => new(_collections.Total, _collections.Snapshot(), LastEtag);

    /// <summary>How far an input source has been applied (null: never).</summary>
    public SourcePosition? SourcePositionOf(string source) => _sources.TryGetValue(source, out var p) ? p : null;

    private readonly MessageLedgers _ledgers = new();

    /// <summary>Whether a queue sink's message was applied (its writes are in the store): <see cref="MessageLedgers"/>.</summary>
    public bool Applied(string ledger, string messageId) => _ledgers.Contains(ledger, messageId);

    // ---- writes -------------------------------------------------------------------------------

    /// <summary>
    /// Applies <paramref name="commands"/> in order and returns once they are durable.
    /// <paramref name="atomic"/>: all or nothing (throws <see cref="WriteRejectedException"/>, writes nothing);
    /// otherwise each command stands alone and failures are reported in its outcome.
    /// </summary>
    public async Task<IReadOnlyList<WriteOutcome>> WriteAsync(IReadOnlyList<WriteCommand> commands, bool atomic, CancellationToken ct = default,
        SourceProgress? progress = null, AppliedMessages? applied = null)
    {
        ObjectDisposedException.ThrowIf(_disposed != 0, this);
        var outcomes = new WriteOutcome[commands.Count];
        // A PUT body is checked before the lock (it does not depend on what is stored); a PATCH result, inside it.
        var refused = new string?[commands.Count];
        for (var i = 0; i < commands.Count; i++)
            if (commands[i] is { Method: WriteMethod.Put, Document: { } body }) refused[i] = Unservable(commands[i], body);
        long end;
        int entries;
        await _writeLock.WaitAsync(ct);
        try
        {
            var plan = await PlanAsync(commands, refused, outcomes);
            if (atomic)
            {
                var failed = Array.FindIndex(outcomes, o => o is { Error: not null });
                if (failed >= 0) throw new WriteRejectedException(failed, outcomes[failed]);
            }
            // Checked before anything is enqueued: a refused write leaves no trace (not stored, counted or readable).
            if (plan.Count > 0) EnsureSpace(plan.Sum(w => (long)w.Document.Length + w.Id.Length * 3L + 256));
            var now = _clock.GetUtcNow();
            var buffer = new ArrayBufferWriter<byte>(4096);
            Dictionary<string, long>? written = null;   // addresses of this batch's writes, for a later write of the same id
            foreach (var w in plan)
            {
                var etag = _lastEtag + 1;
                buffer.ResetWrittenCount();
                var previous = written is not null && written.TryGetValue(w.Id, out var earlier) ? earlier : w.Previous;
                ChangeRecord.Encode(buffer, w.Op, etag, now, w.Id, w.Collection, w.Document, previous);
                var address = _log.Enqueue(buffer.WrittenSpan);
                (written ??= new(StringComparer.Ordinal))[w.Id] = w.Op == ChangeOp.Delete ? 0 : address;
                Interlocked.Exchange(ref _lastEtag, etag);
                ApplyToIndex(w.Op, w.Id, w.Collection, etag, address, w.Before);
                outcomes[w.Index] = new WriteOutcome(w.Id, commands[w.Index].Method, etag, w.Created, null);
            }
            entries = plan.Count;
            if (progress is not null) entries += RecordSourcePositions(progress, outcomes, buffer, now);
            if (applied is { MessageIds.Count: > 0 })
            {
                buffer.ResetWrittenCount();
                ChangeRecord.Encode(buffer, (ChangeOp)ChangeRecord.MessageLedgerOp, 0, now, applied.Ledger, "", MessageLedgers.Encode(applied.MessageIds));
                _log.Enqueue(buffer.WrittenSpan);
                _ledgers.Add(applied.Ledger, applied.MessageIds);
                entries++;
            }
            end = StartCommit(entries);
        }
        finally
        {
            _writeLock.Release();
        }
        if (entries > 0)
        {
            await AwaitCommitAsync(end, CancellationToken.None);
            var newest = outcomes.Length == 0 ? 0 : outcomes.Max(o => o.Etag ?? 0);   // a batch of source positions only has no outcomes
            long known;
            while ((known = Interlocked.Read(ref _committedEtag)) < newest && Interlocked.CompareExchange(ref _committedEtag, newest, known) != known) { }
        }
        IngestMetrics.Wrote(outcomes, fromKafka: progress is not null);
        return outcomes;
    }

    /// <summary>
    /// Starts the commit of <paramref name="entries"/> just enqueued, under the write lock (so never mid-batch): FASTER folds
    /// requests that arrive while a commit is in flight into the next one, which is the group commit. Returns where they end.
    /// </summary>
    private long StartCommit(int entries)
    {
        var end = _log.TailAddress;
        if (entries > 0) _log.Commit(spinWait: false);
        _writesSinceCheckpoint += entries;
        return end;
    }

    /// <summary>Returns once the log is durable up to <paramref name="end"/>; a failed commit is the store's 507.</summary>
    private async Task AwaitCommitAsync(long end, CancellationToken ct)
    {
        try { await _log.WaitForCommitAsync(end, token: ct); }
        catch (CommitFailureException e) { throw CommitFailed(e); }
    }

    /// <summary>
    /// A write that passed its checks; <see cref="Before"/> is the document's collection before it (null: absent),
    /// <see cref="Previous"/> the log address of its stored version (0: none, or written earlier in this batch).
    /// </summary>
    private sealed record PlannedWrite(int Index, ChangeOp Op, string Id, string Collection, byte[] Document, bool Created, string? Before, long Previous);

    /// <summary>A document as a write finds it; <see cref="Id"/> is its id as stored (a write spelling it another way keeps that one).</summary>
    private sealed record Current(bool Exists, long Etag, long Address, string? Collection, byte[]? PendingDocument, string? Id = null);

    private async Task<List<PlannedWrite>> PlanAsync(IReadOnlyList<WriteCommand> commands, string?[] refused, WriteOutcome[] outcomes)
    {
        var plan = new List<PlannedWrite>(commands.Count);
        // Later commands of a batch see the effect of earlier ones on the same id.
        Dictionary<string, Current>? overlay = null;
        for (var i = 0; i < commands.Count; i++)
        {
            var cmd = commands[i];
            if (refused[i] is { } invalidBody) { outcomes[i] = Failed(cmd, WriteErrorKind.Invalid, invalidBody); continue; }
            Current current;
            if (overlay is not null && overlay.TryGetValue(DocumentId.Fold(cmd.Id), out var pending)) current = pending;
            else current = await _index.TryGetAsync(cmd.Id) is { } p
                ? new Current(true, p.Etag, p.Address, _collections.NameOf(p.CollectionId), null,
                    p.IdSpelling == DocumentId.SpellingHash(cmd.Id) ? cmd.Id : ChangeRecord.Decode(await ReadEntryAsync(p.Address, CancellationToken.None)).Id)
                : new Current(false, 0, 0, null, null);
            // Ids compare case-insensitively: the document keeps the id it was first written with.
            var id = current.Exists ? current.Id ?? cmd.Id : cmd.Id;

            if (cmd.IfMatch is { } expected && (!current.Exists || current.Etag != expected))
            {
                var actual = current.Exists ? current.Etag.ToString() : "none (the document does not exist)";
                outcomes[i] = Failed(cmd, WriteErrorKind.Conflict, $"If-Match expected etag {expected}, current etag is {actual}");
                continue;
            }

            PlannedWrite? write = null;
            switch (cmd.Method)
            {
                case WriteMethod.Put:
                    var putDoc = cmd.Document ?? throw new ArgumentException("PUT without a document");
                    write = new PlannedWrite(i, ChangeOp.Put, id, CollectionFor(cmd, id, putDoc), putDoc, !current.Exists, current.Collection, current.Address);
                    break;
                case WriteMethod.Patch:
                    if (!current.Exists) { outcomes[i] = Failed(cmd, WriteErrorKind.NotFound, $"document '{cmd.Id}' does not exist"); continue; }
                    var before = current.PendingDocument ?? await ReadDocumentAsync(current.Address);
                    byte[] patched;
                    try { patched = DocumentPatcher.Apply(before, cmd.Patch!, _options.MaxJsonDepth, _options.MaxDocumentBytes); }
                    catch (DocumentPatchException e) { outcomes[i] = Failed(cmd, e.BreaksLimits ? WriteErrorKind.Invalid : WriteErrorKind.PatchFailed, e.Message); continue; }
                    // Checked before anything reads it (its metadata below): a result too deep or not text is refused here.
                    if (Unservable(cmd, patched) is { } unservable) { outcomes[i] = Failed(cmd, WriteErrorKind.Invalid, unservable); continue; }
                    // A patch keeps the document in its collection unless the patched metadata names another.
                    var patchedCollection = cmd.Collection ?? DocumentJson.ExplicitCollection(patched) ?? current.Collection!;
                    write = new PlannedWrite(i, ChangeOp.Put, id, patchedCollection, patched, false, current.Collection, current.Address);
                    break;
                case WriteMethod.Delete:
                    if (!current.Exists) { outcomes[i] = new WriteOutcome(cmd.Id, cmd.Method, null, false, null); continue; }
                    write = new PlannedWrite(i, ChangeOp.Delete, id, current.Collection!, [], false, current.Collection, current.Address);
                    break;
            }
            if (write!.Op == ChangeOp.Put && DocumentId.ValidateCollection(write.Collection) is { } collectionError)
            {
                outcomes[i] = Failed(cmd, WriteErrorKind.Invalid, collectionError);
                continue;
            }
            plan.Add(write);
            overlay ??= new Dictionary<string, Current>(StringComparer.Ordinal);
            overlay[DocumentId.Fold(cmd.Id)] = write.Op == ChangeOp.Delete
                ? new Current(false, 0, 0, null, null)
                : new Current(true, 0, 0, write.Collection, write.Document, write.Id);
        }
        return plan;
    }

    /// <summary>
    /// The last check every write path meets (PUT, PATCH results, bulk, the input topic, reduce outputs): what is
    /// stored must be a document a GET can serve back, so size, depth and text are checked on the final bytes.
    /// </summary>
    private string? Unservable(WriteCommand cmd, byte[] document)
    {
        var what = cmd.Method == WriteMethod.Patch ? "the patched document" : "the document";
        if (document.Length > _options.MaxDocumentBytes)
            return $"{what} would be {document.Length} bytes, over the limit of {_options.MaxDocumentBytes}";
        var parsed = cmd.ParsedDepth is { } depth && depth <= _options.MaxJsonDepth && ReferenceEquals(document, cmd.Document);
        var reason = parsed ? DocumentJson.ValidateParsedObject(document, _options.MaxJsonDepth) : DocumentJson.ValidateObject(document, _options.MaxJsonDepth);
        return reason is not null ? $"{what} is refused: {reason}" : null;
    }

    private static WriteOutcome Failed(WriteCommand cmd, WriteErrorKind kind, string message) =>
        new(cmd.Id, cmd.Method, null, false, new WriteError(kind, message));

    private static string CollectionFor(WriteCommand cmd, string id, byte[] document) =>
        cmd.Collection ?? DocumentJson.ExplicitCollection(document) ?? DocumentId.CollectionOf(id);

    /// <summary>
    /// Brings FasterKV and the collection counts in line with one change-log entry.
    /// <paramref name="before"/>: the document's collection before this entry, null when it did not exist.
    /// </summary>
    private void ApplyToIndex(ChangeOp op, string id, string collection, long etag, long address, string? before)
    {
        if (op == ChangeOp.Delete)
        {
            if (before is null) return;
            _index.Delete(id);
            _collections.Add(_collections.IdOf(before), -1);
            return;
        }
        var collectionId = _collections.IdOf(collection);
        _index.Upsert(id, new DocPointer(etag, address, collectionId, DocumentId.SpellingHash(id)));
        if (before is null) _collections.Add(collectionId, +1);
        else if (_collections.IdOf(before) != collectionId)
        {
            _collections.Add(_collections.IdOf(before), -1);
            _collections.Add(collectionId, +1);
        }
    }

    /// <summary>
    /// Appends one source-position entry per source after the batch's writes (same commit, so they are
    /// durable together) and returns how many entries it added.
    /// </summary>
    private int RecordSourcePositions(SourceProgress progress, WriteOutcome[] outcomes, ArrayBufferWriter<byte> buffer, DateTimeOffset now)
    {
        var rejected = progress.Next.Keys.ToDictionary(k => k, _ => new HashSet<long>(), StringComparer.Ordinal);
        for (var i = 0; i < outcomes.Length; i++)
            if (outcomes[i].Error is not null) rejected[progress.Origins[i].Source].Add(progress.Origins[i].Offset);
        foreach (var (source, batchNext) in progress.Next)
        {
            // A redelivered batch may end before the original one did: the position never moves back, and
            // rejected offsets beyond this batch stay rejected (offsets before it were re-evaluated here,
            // or lie below what Kafka has committed).
            var previous = _sources.GetValueOrDefault(source);
            var next = Math.Max(previous?.Next ?? 0, batchNext);
            if (previous is not null) rejected[source].UnionWith(previous.Rejected.Where(o => o >= batchNext));
            buffer.ResetWrittenCount();
            var rejectedList = System.Text.Encoding.ASCII.GetBytes(string.Join(',', rejected[source]));
            ChangeRecord.Encode(buffer, (ChangeOp)ChangeRecord.SourcePositionOp, next, now, source, "", rejectedList);
            _log.Enqueue(buffer.WrittenSpan);
            _sources[source] = new SourcePosition(next, rejected[source]);
        }
        return progress.Next.Count;
    }

    private void ApplySourcePosition(ReadOnlySpan<byte> entry)
    {
        var record = ChangeRecord.Decode(entry);
        var rejected = System.Text.Encoding.ASCII.GetString(record.Document)
            .Split(',', StringSplitOptions.RemoveEmptyEntries).Select(long.Parse).ToHashSet();
        _sources[record.Id] = new SourcePosition(record.Etag, rejected);
    }
}

public sealed record StoreStats(long Documents, IReadOnlyDictionary<string, long> Collections, long LastEtag);

public sealed record BrowsePage(IReadOnlyList<StoredDocument> Results, long? NextCursor);
