using System.Buffers.Binary;
using System.IO.Hashing;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Magpie.Embeddings.Caching;

/// <summary>
/// Vectors already made, by their text, for one model: an index rebuilt, reset or replaced side by side finds its texts' vectors
/// here instead of asking the model again. Two append-only files in the model's folder, the newer and the older generation: a
/// vector found only in the older is copied into the newer, and once the newer holds half the budget the older goes and the newer
/// becomes it, so what is still asked for stays and the whole never passes the budget. Each record carries a checksum: after a
/// kill -9 the torn tail is cut off when the file is opened again (a cache loses at most what it had not written).
/// </summary>
public sealed class EmbeddingCache : IDisposable
{
    private const uint Magic = 0x4D504543;   // "MPEC"
    private const int HeaderBytes = 4 + 4 + 16, TrailerBytes = 4;

    private readonly string _folder;
    private readonly long _budgetBytes;
    private readonly Lock _lock = new();
    private Generation _newer, _older;

    private EmbeddingCache(string root, string id, long budgetBytes)
    {
        (_folder, _budgetBytes) = (Path.Combine(root, id), budgetBytes);
        Directory.CreateDirectory(_folder);
        _older = Generation.Open(Path.Combine(_folder, "older.vectors"));
        _newer = Generation.Open(Path.Combine(_folder, "newer.vectors"));
    }

    /// <summary>The id of a model's cache (<paramref name="model"/> names it with whatever changes its vectors: provider, address, dimensions).</summary>
    public static string IdOf(string model) => Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(model)))[..16];

    /// <summary>The cache of one model (<see cref="IdOf"/>), under <paramref name="root"/>.</summary>
    public static EmbeddingCache Open(string root, string id, long budgetBytes)
    {
        if (id.Length != 16 || !id.All(char.IsAsciiHexDigitLower)) throw new ArgumentException($"'{id}' is not an embedding cache's id", nameof(id));
        return new EmbeddingCache(root, id, budgetBytes);
    }

    /// <summary>Called with each vector <see cref="Keep"/> kept that the cache did not hold (outside its lock): what Kafka mode shares.</summary>
    public Action<UInt128, float[]>? Kept { get; set; }

    public long Hits, Misses;

    /// <summary>The vector of each text when kept (null where not).</summary>
    public float[]?[] Find(IReadOnlyList<string> texts)
    {
        var found = new float[]?[texts.Count];
        lock (_lock)
            for (var i = 0; i < texts.Count; i++)
            {
                var key = KeyOf(texts[i]);
                if (_newer.Read(key) is { } vector) found[i] = vector;
                else if (_older.Read(key) is { } old) { found[i] = old; Append(key, old); }
            }
        var hits = found.Count(f => f is not null);
        Interlocked.Add(ref Hits, hits);
        Interlocked.Add(ref Misses, texts.Count - hits);
        return found;
    }

    /// <summary>Keeps vectors just made.</summary>
    public void Keep(IReadOnlyList<string> texts, IReadOnlyList<float[]> vectors)
    {
        var added = new List<(UInt128, float[])>(texts.Count);
        lock (_lock)
        {
            for (var i = 0; i < texts.Count; i++)
                if (KeyOf(texts[i]) is var key && Append(key, vectors[i])) added.Add((key, vectors[i]));
        }
        if (Kept is { } kept) foreach (var (key, vector) in added) kept(key, vector);
    }

    /// <summary>Keeps a vector another process made (by its text's key), unless held already; true when it was not.</summary>
    public bool Absorb(UInt128 key, float[] vector)
    {
        lock (_lock) return !_older.Contains(key) && Append(key, vector);
    }

    /// <summary>Appends the vector to the newer generation unless it holds it (rolling the generations first when it is full).</summary>
    private bool Append(UInt128 key, float[] vector)
    {
        if (_newer.Contains(key)) return false;
        if (_newer.Length >= _budgetBytes / 2)
        {
            // The newer generation holds its half: the older goes, the newer becomes it.
            _older.Dispose();
            File.Delete(Path.Combine(_folder, "older.vectors"));
            _newer.Dispose();
            File.Move(Path.Combine(_folder, "newer.vectors"), Path.Combine(_folder, "older.vectors"));
            _older = Generation.Open(Path.Combine(_folder, "older.vectors"));
            _newer = Generation.Open(Path.Combine(_folder, "newer.vectors"));
        }
        _newer.Append(key, vector);
        return true;
    }

    /// <summary>A text's key: 128 bits of XxHash128 of its UTF-16 characters (a collision between two texts is not a concern at 2^-64).</summary>
    public static UInt128 KeyOf(string text) => XxHash128.HashToUInt128(MemoryMarshal.AsBytes(text.AsSpan()));

    public void Dispose()
    {
        lock (_lock)
        {
            _newer.Dispose();
            _older.Dispose();
        }
    }

    /// <summary>One append-only file and where each of its vectors starts.</summary>
    private sealed class Generation : IDisposable
    {
        private readonly FileStream _file;
        private readonly Dictionary<UInt128, (long Offset, int Dimensions)> _offsets = [];

        private Generation(FileStream file) => _file = file;

        public long Length => _file.Length;

        public bool Contains(UInt128 key) => _offsets.ContainsKey(key);

        /// <summary>Opens the file, reads where each whole record lies, and cuts off a torn or corrupt tail.</summary>
        public static Generation Open(string path)
        {
            // Unbuffered: a vector appended is read back through the handle at once (RandomAccess), never from a buffer not yet written.
            var generation = new Generation(new FileStream(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None, bufferSize: 0));
            var file = generation._file;
            var header = new byte[HeaderBytes];
            long at = 0;
            while (at + HeaderBytes + TrailerBytes <= file.Length)
            {
                file.Position = at;
                file.ReadExactly(header);
                var dimensions = BinaryPrimitives.ReadInt32LittleEndian(header.AsSpan(4));
                if (BinaryPrimitives.ReadUInt32LittleEndian(header) != Magic || dimensions is < 1 or > 65_536) break;
                var length = HeaderBytes + dimensions * 4 + TrailerBytes;
                if (at + length > file.Length) break;
                var record = new byte[length];
                file.Position = at;
                file.ReadExactly(record);
                if (Crc32.HashToUInt32(record.AsSpan(0, length - TrailerBytes)) != BinaryPrimitives.ReadUInt32LittleEndian(record.AsSpan(length - TrailerBytes))) break;
                generation._offsets[BinaryPrimitives.ReadUInt128LittleEndian(header.AsSpan(8))] = (at + HeaderBytes, dimensions);
                at += length;
            }
            if (at < file.Length) file.SetLength(at);
            file.Position = at;
            return generation;
        }

        public float[]? Read(UInt128 key)
        {
            if (!_offsets.TryGetValue(key, out var where)) return null;
            var vector = new float[where.Dimensions];
            RandomAccess.Read(_file.SafeFileHandle, MemoryMarshal.AsBytes(vector.AsSpan()), where.Offset);
            return vector;
        }

        public void Append(UInt128 key, float[] vector)
        {
            var length = HeaderBytes + vector.Length * 4 + TrailerBytes;
            var record = new byte[length];
            BinaryPrimitives.WriteUInt32LittleEndian(record, Magic);
            BinaryPrimitives.WriteInt32LittleEndian(record.AsSpan(4), vector.Length);
            BinaryPrimitives.WriteUInt128LittleEndian(record.AsSpan(8), key);
            MemoryMarshal.AsBytes(vector.AsSpan()).CopyTo(record.AsSpan(HeaderBytes));
            BinaryPrimitives.WriteUInt32LittleEndian(record.AsSpan(length - TrailerBytes), Crc32.HashToUInt32(record.AsSpan(0, length - TrailerBytes)));
            var at = _file.Length;
            _file.Position = at;
            _file.Write(record);
            _offsets[key] = (at + HeaderBytes, vector.Length);
        }

        public void Dispose() => _file.Dispose();
    }
}
