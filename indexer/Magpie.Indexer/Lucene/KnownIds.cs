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
/// id sets <see cref="Hashes"/> bits of one layer. Bounded: past <see cref="MaxBytes"/> (about 100 million ids) it answers "maybe"
/// for every id, and the index updates as it did without it. Safe for concurrent writers of different ids (bits are set
/// atomically); one id is written by one thread at a time.
/// </remarks>
internal sealed class KnownIds
{
    private const int BitsPerId = 10, Hashes = 7;   // ~1 % false positives at a layer's capacity
    private const long FirstCapacity = 1 << 16;
    public const long MaxBytes = 128L << 20;

    private readonly long _maxBytes;
    private readonly Lock _grow = new();
    private volatile Layer[] _layers;
    private volatile bool _full, _filling;
    private long _inNewest;

    /// <param name="expected">Ids about to be added (an index's at open): the first layer holds twice as many.</param>
    /// <param name="filling">True while an index's existing ids are still being added: until <see cref="Filled"/>, no id is new.</param>
    public KnownIds(long expected = 0, bool filling = false, long maxBytes = MaxBytes)
    {
        _maxBytes = maxBytes;
        _filling = filling;
        _layers = [new Layer(Math.Clamp(expected * 2, FirstCapacity, Math.Max(FirstCapacity, maxBytes * 8 / BitsPerId / 2)))];
    }

    /// <summary>The filter's memory, in bytes.</summary>
    public long Bytes => _layers.Sum(l => l.Bits.LongLength * sizeof(long));

    /// <summary>True until <see cref="Filled"/>: no id is new meanwhile.</summary>
    public bool Filling => _filling;

    /// <summary>True once the filter outgrew its bound (<see cref="MaxBytes"/>): from then on every id may be known.</summary>
    public bool Full => _full;

    /// <summary>Every id the index held when the filter was made has been added: from now on <see cref="Add"/> can say "new".</summary>
    public void Filled() => _filling = false;

    /// <summary>False when the index certainly holds nothing of <paramref name="id"/>: there is nothing to delete.</summary>
    public bool MayHold(string id)
    {
        if (_full || _filling) return true;
        var (h1, h2) = HashOf(id);
        foreach (var layer in _layers) if (layer.Has(h1, h2)) return true;
        return false;
    }

    /// <summary>Records <paramref name="id"/>; true when it was certainly not known before (a false "false" only costs an update).</summary>
    public bool Add(string id)
    {
        // Read before the layers: if the fill was still running then, an id missing from them may be one it had not reached yet.
        var filling = _filling;
        if (_full) return false;
        var (h1, h2) = HashOf(id);
        var layers = _layers;
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
            if (_layers != layers || _full) return;
            var newest = layers[^1];
            if (Bytes + newest.Bits.LongLength * sizeof(long) * 2 > _maxBytes) { _full = true; return; }
            _layers = [.. layers, new Layer(newest.Capacity * 2)];
            Interlocked.Exchange(ref _inNewest, 0);
        }
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
        public long[] Bits { get; } = new long[(capacity * BitsPerId + 63) / 64];

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
