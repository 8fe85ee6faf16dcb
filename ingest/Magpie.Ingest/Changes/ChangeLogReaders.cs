using System.Collections.Concurrent;

namespace Magpie.Ingest.Changes;

/// <summary>
/// Everything that reads the embedded change log and resumes from a position it persisted (index workers, ETL tasks,
/// subscriptions, the Kafka relay), with that durable position as a log address (0: from the beginning). Compaction
/// truncates the log only behind the lowest of them, so no reader ever resumes into a hole.
/// </summary>
public sealed class ChangeLogReaders
{
    private readonly ConcurrentDictionary<object, (string Name, Func<long> Durable)> _readers = new();

    /// <summary>Registers a reader until the returned handle is disposed (the reader is gone for good or stopped).</summary>
    public IDisposable Track(string name, Func<long> durable)
    {
        var handle = new Handle(this);
        _readers[handle] = (name, durable);
        return handle;
    }

    /// <summary>The lowest durable position and whose it is; null when nothing reads the log.</summary>
    public (long Address, string Reader)? Lowest()
    {
        (long, string)? lowest = null;
        foreach (var (name, durable) in _readers.Values)
        {
            var at = durable();
            if (lowest is not { } l || at < l.Item1) lowest = (at, name);
        }
        return lowest;
    }

    public IReadOnlyList<(string Name, long Address)> All() => _readers.Values.Select(r => (r.Name, r.Durable())).OrderBy(r => r.Item2).ToList();

    private sealed class Handle(ChangeLogReaders owner) : IDisposable
    {
        public void Dispose() => owner._readers.TryRemove(this, out _);
    }
}
