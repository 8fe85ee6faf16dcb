using System.Buffers;
using System.Buffers.Binary;
using System.Text;

namespace Magpie.Indexer.Lucene;

/// <summary>Writes a request the way java.io.DataInputStream reads it: big-endian numbers, strings as int32 length + UTF-8 (−1 = null).</summary>
internal sealed class FrameWriter
{
    private readonly ArrayBufferWriter<byte> _buffer = new(256);

    public ReadOnlyMemory<byte> Written => _buffer.WrittenMemory;

    public FrameWriter Byte(byte v) { _buffer.GetSpan(1)[0] = v; _buffer.Advance(1); return this; }

    public FrameWriter Bool(bool v) => Byte(v ? (byte)1 : (byte)0);

    public FrameWriter Int(int v) { BinaryPrimitives.WriteInt32BigEndian(_buffer.GetSpan(4), v); _buffer.Advance(4); return this; }

    public FrameWriter Long(long v) { BinaryPrimitives.WriteInt64BigEndian(_buffer.GetSpan(8), v); _buffer.Advance(8); return this; }

    public FrameWriter Double(double v) { BinaryPrimitives.WriteDoubleBigEndian(_buffer.GetSpan(8), v); _buffer.Advance(8); return this; }

    public FrameWriter Float(float v) { BinaryPrimitives.WriteSingleBigEndian(_buffer.GetSpan(4), v); _buffer.Advance(4); return this; }

    public FrameWriter Bytes(ReadOnlySpan<byte> b) { b.CopyTo(_buffer.GetSpan(b.Length)); _buffer.Advance(b.Length); return this; }

    public FrameWriter String(string? s)
    {
        if (s is null) return Int(-1);
        var n = Encoding.UTF8.GetByteCount(s);
        Int(n);
        Encoding.UTF8.GetBytes(s, _buffer.GetSpan(n));
        _buffer.Advance(n);
        return this;
    }
}

/// <summary>Reads a response written by java.io.DataOutputStream.</summary>
internal sealed class FrameReader(byte[] frame, int offset)
{
    private int _at = offset;

    public int Position => _at;

    public byte Byte() => frame[_at++];
    public bool Bool() => Byte() != 0;
    public int Int() { var v = BinaryPrimitives.ReadInt32BigEndian(frame.AsSpan(_at)); _at += 4; return v; }
    public long Long() { var v = BinaryPrimitives.ReadInt64BigEndian(frame.AsSpan(_at)); _at += 8; return v; }
    public double Double() { var v = BinaryPrimitives.ReadDoubleBigEndian(frame.AsSpan(_at)); _at += 8; return v; }
    public float Float() { var v = BinaryPrimitives.ReadSingleBigEndian(frame.AsSpan(_at)); _at += 4; return v; }

    public ReadOnlySpan<byte> Bytes(int n) { var s = frame.AsSpan(_at, n); _at += n; return s; }

    public ReadOnlySpan<byte> Slice(int from, int to) => frame.AsSpan(from, to - from);

    public string? String()
    {
        var n = Int();
        if (n < 0) return null;
        var s = Encoding.UTF8.GetString(frame, _at, n);
        _at += n;
        return s;
    }
}
