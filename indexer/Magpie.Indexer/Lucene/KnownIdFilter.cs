using System.IO.Hashing;
using System.Runtime.InteropServices;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// Every id an index may hold, as a Bloom filter that grows: when <see cref="Add"/> says an id is new, the index has never held
/// it, so its entries are added without a delete term. A delete term costs a lookup of the id in every segment when Lucene applies
/// deletes (8.8 % of the Kafka indexer's CPU by a perf profile, where every post was new). Lucene's own answer, the Bloom postings
/// format, is in Lucene.Net.Codecs, which the NuGet mirror does not serve; this one also spares the delete term itself.
/// </summary>
/// <remarks>
/// Never wrong the harmful way: ids are only added, never removed (a deleted id stays "maybe"), and an index fills it from every
/// id it holds when it opens, in the background (no id is new until that is done). A false positive (about 1 % per layer) only
/// costs the update it would have cost anyway. Layers double in size as ids arrive, so nothing has to be known in advance; each
/// id sets <see cref="Hashes"/> bits of one layer. Bounded twice: past <see cref="MaxBytes"/> for one index (about 100 million
/// ids), or when the engine's <see cref="KnownIdsBudget"/> for all of them has no room for its next layer, it drops its layers and
/// answers "maybe" for every id; the index updates as it did without it. Safe for concurrent writers of different ids (bits are
/// set atomically); one id is written by one thread at a time.
/// </remarks>
internal sealed class KnownIdFilter
{
    private const int BitsPerId = 10, Hashes = 7;   // ~1 % false positives at a layer's capacity
    private const long FirstCapacity = 1 << 16;
    public const long MaxBytes = 128L << 20;

    private readonly long _maxBytes;
    private readonly KnownIdsBudget _budget;
    private readonly Lock _grow = new();
    private volatile Layer[] _layers;   // none once full: every id "maybe"
    private volatile bool _filling;
    private long _inNewest, _taken;

    /// <param name="expected">Ids about to be added (an index's at open): the first layer holds twice as many.</param>
    /// <param name="filling">True while an index's existing ids are still being added: until <see cref="Filled"/>, no id is new.</param>
    /// <param name="budget">The memory all of an engine's filters share (none: only <paramref name="maxBytes"/> bounds it).</param>
    public KnownIdFilter(long expected = 0, bool filling = false, long maxBytes = MaxBytes, KnownIdsBudget? budget = null)
    {
        _maxBytes = maxBytes;
        _budget = budget ?? KnownIdsBudget.Unbounded;
        _filling = filling;
        var first = Math.Clamp(expected * 2, FirstCapacity, Math.Max(FirstCapacity, maxBytes * 8 / BitsPerId / 2));
        _layers = Take(Layer.BytesFor(first)) ? [new Layer(first)] : [];
    }

    /// <summary>The filter's memory, in bytes.</summary>
    public long Bytes => _layers.Sum(l => l.Bytes);

    /// <summary>True until <see cref="Filled"/>: no id is new meanwhile.</summary>
    public bool Filling => _filling;

    /// <summary>True once the filter outgrew its bound or its budget (or was released): from then on every id may be known.</summary>
    public bool Full => _layers.Length == 0;

    /// <summary>Every id the index held when the filter was made has been added: from now on <see cref="Add"/> can say "new".</summary>
    public void Filled() => _filling = false;

    /// <summary>False when the index certainly holds nothing of <paramref name="id"/>: there is nothing to delete.</summary>
    public bool MayHold(string id)
    {
        // One read of the layers: ones dropped meanwhile (full) were complete when read, so "not in them" still holds.
        var layers = _layers;
        if (layers.Length == 0 || _filling) return true;
        var (h1, h2) = HashOf(id);
        foreach (var layer in layers) if (layer.Has(h1, h2)) return true;
        return false;
    }

    /// <summary>Records <paramref name="id"/>; true when it was certainly not known before (a false "false" only costs an update).</summary>
    public bool Add(string id)
    {
        // Read before the layers: if the fill was still running then, an id missing from them may be one it had not reached yet.
        var filling = _filling;
        var layers = _layers;
        if (layers.Length == 0) return false;
        var (h1, h2) = HashOf(id);
        foreach (var layer in layers) if (layer.Has(h1, h2)) return false;
        var newest = layers[^1];
        newest.Set(h1, h2);
        if (Interlocked.Increment(ref _inNewest) > newest.Capacity) Grow(layers);
        return !filling;
    }

    private void Grow(Layer[] layers)
    {
        lock (_grow)
        {
            if (_layers != layers || layers.Length == 0) return;
            var next = layers[^1].Capacity * 2;
            if (Bytes + Layer.BytesFor(next) > _maxBytes || !Take(Layer.BytesFor(next))) { Drop(); return; }
            _layers = [.. layers, new Layer(next)];
            Interlocked.Exchange(ref _inNewest, 0);
        }
    }

    /// <summary>Drops the layers and gives their memory back to the budget: from then on every id is "maybe" (full).</summary>
    public void Release()
    {
        lock (_grow) Drop();
    }

    private void Drop()
    {
        _layers = [];
        _budget.Give(Interlocked.Exchange(ref _taken, 0));
    }

    private bool Take(long bytes)
    {
        if (!_budget.TryTake(bytes)) return false;
        Interlocked.Add(ref _taken, bytes);
        return true;
    }

    /// <summary>Two independent 32-bit halves of one 64-bit hash; bit i of k is h1 + i·h2 (Kirsch–Mitzenmacher).</summary>
    private static (uint, uint) HashOf(string id)
    {
        var h = XxHash3.HashToUInt64(MemoryMarshal.AsBytes(id.AsSpan()));
        return ((uint)h, (uint)(h >> 32) | 1);
    }

    private sealed class Layer(long capacity)
    {
        public long Capacity { get; } = capacity;
        public long[] Bits { get; } = new long[Words(capacity)];

        public long Bytes => Bits.LongLength * sizeof(long);

        public static long BytesFor(long capacity) => Words(capacity) * sizeof(long);

        private static long Words(long capacity) => (capacity * BitsPerId + 63) / 64;

        private long BitCount => Bits.LongLength * 64;

        public bool Has(uint h1, uint h2)
        {
            for (var i = 0u; i < Hashes; i++)
            {
                var bit = Bit(h1 + i * h2);
                if ((Volatile.Read(ref Bits[bit >> 6]) & (1L << (int)(bit & 63))) == 0) return false;
            }
            return true;
        }

        public void Set(uint h1, uint h2)
        {
            for (var i = 0u; i < Hashes; i++)
            {
                var bit = Bit(h1 + i * h2);
                Interlocked.Or(ref Bits[bit >> 6], 1L << (int)(bit & 63));
            }
        }

        /// <summary>A 32-bit hash scaled onto the layer's bits (a multiply and a shift, no division).</summary>
        private long Bit(uint hash) => (long)((ulong)hash * (ulong)BitCount >> 32);
    }
}

/// <summary>
/// The memory the known-id filters of all an engine's indexes (and shards) may take together (<c>KnownIdsMegabytes</c>): a filter
/// whose next layer does not fit stops filtering, and its index writes updates as it would without one. A closed or emptied
/// index gives its filter's memory back.
/// </summary>
internal sealed class KnownIdsBudget(long bytes)
{
    public static readonly KnownIdsBudget Unbounded = new(long.MaxValue);

    private long _used;

    public long Used => Volatile.Read(ref _used);

    public bool TryTake(long n)
    {
        if (Interlocked.Add(ref _used, n) <= bytes) return true;
        Interlocked.Add(ref _used, -n);
        return false;
    }

    public void Give(long n) => Interlocked.Add(ref _used, -n);
}
