using System.Collections.Concurrent;

namespace Magpie.Ingest.Documents;

/// <summary>
/// Document counts per collection, kept up to date by every write so that /stats is O(collections),
/// never a scan. Collection names compare case-insensitively; the first spelling seen is the one shown.
/// Ids are small integers so <see cref="DocPointer"/> stays blittable.
/// </summary>
internal sealed class CollectionCounts
{
    private readonly ConcurrentDictionary<string, int> _ids = new(StringComparer.OrdinalIgnoreCase);
    private readonly List<string> _names = [];
    private long[] _counts = new long[16];
    private readonly Lock _gate = new();

    public int IdOf(string name)
    {
        if (_ids.TryGetValue(name, out var id)) return id;
        lock (_gate)
        {
            if (_ids.TryGetValue(name, out id)) return id;
            id = _names.Count;
            _names.Add(name);
            if (id >= _counts.Length) Array.Resize(ref _counts, _counts.Length * 2);
            _ids[name] = id;
            return id;
        }
    }

    public string NameOf(int id) { lock (_gate) return _names[id]; }

    public void Add(int id, long delta) { lock (_gate) _counts[id] += delta; }

    public long Total { get { lock (_gate) return _counts.Sum(); } }

    public IReadOnlyDictionary<string, long> Snapshot()
    {
        lock (_gate)
        {
            var result = new Dictionary<string, long>(StringComparer.OrdinalIgnoreCase);
            for (var i = 0; i < _names.Count; i++)
                if (_counts[i] > 0) result[_names[i]] = _counts[i];
            return result;
        }
    }

    public List<CollectionState> Save() { lock (_gate) return _names.Select((n, i) => new CollectionState(i, n, _counts[i])).ToList(); }

    public void Load(IEnumerable<CollectionState> states)
    {
        lock (_gate)
        {
            foreach (var s in states.OrderBy(s => s.Id))
            {
                if (s.Id != _names.Count) throw new InvalidDataException("collection ids in the store state are not contiguous");
                _names.Add(s.Name);
                _ids[s.Name] = s.Id;
                if (s.Id >= _counts.Length) Array.Resize(ref _counts, Math.Max(_counts.Length * 2, s.Id + 1));
                _counts[s.Id] = s.Count;
            }
        }
    }
}

internal sealed record CollectionState(int Id, string Name, long Count);
