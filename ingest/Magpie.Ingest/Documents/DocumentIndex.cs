using System.Collections.Concurrent;
using FASTER.core;

namespace Magpie.Ingest.Documents;

/// <summary>
/// Where the latest version of a document lives: its etag, change-log address and collection, and the hash of its id as stored
/// (<see cref="Magpie.Contracts.Documents.DocumentId.SpellingHash"/>): a write that spells the id another way reads the stored id.
/// </summary>
public readonly record struct DocPointer(long Etag, long Address, int CollectionId, long IdSpelling);

/// <summary>
/// FasterKV from document id, folded (ids compare case-insensitively: <see cref="Magpie.Contracts.Documents.DocumentId.Fold"/>), to <see cref="DocPointer"/>. Sized explicitly (FasterKV defaults to 16 GB).
/// Checkpoints are taken by token and recovered by token, so the store can pair each checkpoint with the
/// change-log address from which to replay (see <see cref="DocumentStore"/>).
/// </summary>
internal sealed class DocumentIndex : IDisposable
{
    private readonly FasterKV<string, DocPointer> _kv;
    private readonly FasterKVSettings<string, DocPointer> _settings;
    private readonly ConcurrentBag<ClientSession<string, DocPointer, DocPointer, DocPointer, Empty, IFunctions<string, DocPointer, DocPointer, DocPointer, Empty>>> _sessions = [];
    private readonly string _checkpointDir;

    public DocumentIndex(string dir, DocumentStoreOptions options)
    {
        _checkpointDir = Path.Combine(dir, "checkpoints");
        _settings = new FasterKVSettings<string, DocPointer>(dir, deleteDirOnDispose: false, logger: null)
        {
            IndexSize = options.IndexBytes,
            MemorySize = options.IndexMemoryBytes,
            PageSize = Math.Min(1L << 22, options.IndexMemoryBytes / 4),
            KeySerializer = () => new StringKeySerializer(),
            CheckpointDir = _checkpointDir,
            RemoveOutdatedCheckpoints = false,
            TryRecoverLatest = false,
        };
        _kv = new FasterKV<string, DocPointer>(_settings);
    }

    public void Recover(Guid token) => _kv.Recover(token);

    /// <summary>
    /// Synchronous read: pointers are small and nearly always in memory, and the async path's state
    /// machine was a visible share of the write path in the profile. A read that has to go to disk
    /// (pending) is completed in place.
    /// </summary>
    public ValueTask<DocPointer?> TryGetAsync(string id)
    {
        var session = Rent();
        try
        {
            var (status, output) = session.Read(Magpie.Contracts.Documents.DocumentId.Fold(id));
            if (status.IsPending)
            {
                session.CompletePendingWithOutputs(out var completed, wait: true);
                using (completed)
                    if (completed.Next()) (status, output) = (completed.Current.Status, completed.Current.Output);
            }
            return ValueTask.FromResult<DocPointer?>(status.Found ? output : null);
        }
        finally { _sessions.Add(session); }
    }

    /// <summary>Writes happen under the store's write lock, so one session at a time uses this path.</summary>
    public void Upsert(string id, DocPointer pointer)
    {
        var session = Rent();
        try { session.Upsert(Magpie.Contracts.Documents.DocumentId.Fold(id), pointer); }
        finally { _sessions.Add(session); }
    }

    public void Delete(string id)
    {
        var session = Rent();
        try { session.Delete(Magpie.Contracts.Documents.DocumentId.Fold(id)); }
        finally { _sessions.Add(session); }
    }

    public async Task<Guid> CheckpointAsync()
    {
        var (ok, token) = await _kv.TakeFullCheckpointAsync(CheckpointType.FoldOver);
        if (!ok) throw new InvalidOperationException("FasterKV checkpoint did not complete");
        return token;
    }

    /// <summary>Deletes every checkpoint but <paramref name="keep"/> (called once the store state names it).</summary>
    public void RemoveCheckpointsExcept(Guid keep)
    {
        if (!Directory.Exists(_checkpointDir)) return;
        foreach (var dir in Directory.EnumerateDirectories(_checkpointDir, "*", SearchOption.AllDirectories).ToList())
        {
            if (Guid.TryParse(Path.GetFileName(dir), out var g) && g != keep && Directory.Exists(dir))
                Directory.Delete(dir, recursive: true);
        }
    }

    private ClientSession<string, DocPointer, DocPointer, DocPointer, Empty, IFunctions<string, DocPointer, DocPointer, DocPointer, Empty>> Rent() =>
        _sessions.TryTake(out var s) ? s : _kv.NewSession(new SimpleFunctions<string, DocPointer>());

    public void Dispose()
    {
        while (_sessions.TryTake(out var s)) s.Dispose();
        _kv.Dispose();
        _settings.Dispose();
    }

    private sealed class StringKeySerializer : BinaryObjectSerializer<string>
    {
        public override void Deserialize(out string obj) => obj = reader.ReadString();
        public override void Serialize(ref string obj) => writer.Write(obj);
    }
}
