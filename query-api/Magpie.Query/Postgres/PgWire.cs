using System.Buffers.Binary;
using System.Text;

namespace Magpie.Query.Postgres;

/// <summary>
/// PostgreSQL protocol 3 framing over a stream: reads the client's messages (type byte, int32 length, body) and
/// builds the server's into one buffer, sent by <see cref="FlushAsync"/>. Messages past <see cref="MaxMessage"/> are
/// refused, so one client can't make the server buffer without bound.
/// </summary>
public sealed class PgWire(Stream stream)
{
    public const int MaxMessage = 16 << 20;
    private readonly MemoryStream _out = new();
    private int _start = -1;

    public Stream Stream { get; set; } = stream;

    /// <summary>PostgreSQL's own limit on a startup message (MAX_STARTUP_PACKET_LENGTH).</summary>
    public const int MaxStartup = 10_000;

    private async Task DrainAsync(int count, CancellationToken ct)
    {
        var buffer = new byte[64 * 1024];
        while (count > 0)
        {
            var read = await Stream.ReadAsync(buffer.AsMemory(0, Math.Min(buffer.Length, count)), ct);
            if (read == 0) return;
            count -= read;
        }
    }

    /// <summary>The untyped first message (startup, SSL/cancel request): its body after the length.</summary>
    public async Task<byte[]?> ReadStartupAsync(CancellationToken ct)
    {
        var head = new byte[4];
        if (!await ReadExactlyAsync(head, ct)) return null;
        var length = BinaryPrimitives.ReadInt32BigEndian(head);
        if (length is < 8 or > MaxStartup)
        {
            // Read what the client sends before answering, so it reads the error instead of a reset (closing over unread bytes).
            if (length > MaxStartup && length <= MaxMessage) await DrainAsync(length - 4, ct);
            throw new PgException(PgException.ProtocolViolation, $"invalid startup packet length {length}: a startup message takes at most {MaxStartup:N0} bytes", fatal: true);
        }
        var body = new byte[length - 4];
        return await ReadExactlyAsync(body, ct) ? body : null;
    }

    /// <summary>The next message, or null when the client closed the connection.</summary>
    public async Task<(char Type, byte[] Body)?> ReadAsync(CancellationToken ct)
    {
        var head = new byte[5];
        if (!await ReadExactlyAsync(head, ct)) return null;
        var length = BinaryPrimitives.ReadInt32BigEndian(head.AsSpan(1));
        if (length is < 4 or > MaxMessage) throw new PgException(PgException.ProtocolViolation, $"invalid message length {length}", fatal: true);
        var body = new byte[length - 4];
        return await ReadExactlyAsync(body, ct) ? ((char)head[0], body) : null;
    }

    private async Task<bool> ReadExactlyAsync(byte[] buffer, CancellationToken ct)
    {
        try { await Stream.ReadExactlyAsync(buffer, ct); return true; }
        catch (EndOfStreamException) { return false; }
    }

    public PgWire Begin(char type)
    {
        _out.WriteByte((byte)type);
        _start = (int)_out.Position;
        _out.Write(stackalloc byte[4]);
        return this;
    }

    public PgWire End()
    {
        var end = (int)_out.Position;
        BinaryPrimitives.WriteInt32BigEndian(_out.GetBuffer().AsSpan(_start), end - _start);
        return this;
    }

    public PgWire Byte(byte b) { _out.WriteByte(b); return this; }
    public PgWire Int16(short v) { Span<byte> b = stackalloc byte[2]; BinaryPrimitives.WriteInt16BigEndian(b, v); _out.Write(b); return this; }
    public PgWire Int32(int v) { Span<byte> b = stackalloc byte[4]; BinaryPrimitives.WriteInt32BigEndian(b, v); _out.Write(b); return this; }
    public PgWire Bytes(ReadOnlySpan<byte> b) { _out.Write(b); return this; }

    public PgWire CString(string s)
    {
        _out.Write(Encoding.UTF8.GetBytes(s));
        _out.WriteByte(0);
        return this;
    }

    /// <summary>Bytes written and not yet sent (a DataRow loop flushes when this grows).</summary>
    public long Pending => _out.Length;

    public async Task FlushAsync(CancellationToken ct)
    {
        if (_out.Length == 0) return;
        await Stream.WriteAsync(_out.GetBuffer().AsMemory(0, (int)_out.Length), ct);
        await Stream.FlushAsync(ct);
        _out.SetLength(0);
    }

    // ---- the server's messages ----

    public PgWire Authentication(int code, ReadOnlySpan<byte> data = default) => Begin('R').Int32(code).Bytes(data).End();

    public PgWire ParameterStatus(string name, string value) => Begin('S').CString(name).CString(value).End();

    public PgWire ReadyForQuery(char status = 'I') => Begin('Z').Byte((byte)status).End();

    public PgWire CommandComplete(string tag) => Begin('C').CString(tag).End();

    public PgWire EmptyQuery() => Begin('I').End();

    public PgWire Error(PgException e) => Begin('E')
        .Byte((byte)'S').CString(e.Fatal ? "FATAL" : "ERROR").Byte((byte)'V').CString(e.Fatal ? "FATAL" : "ERROR")
        .Byte((byte)'C').CString(e.SqlState).Byte((byte)'M').CString(SqlText.Shorten(e.Message, MaxErrorChars)).Byte(0).End();

    /// <summary>An error never echoes a whole statement back: whatever it quotes, its message stops here.</summary>
    public const int MaxErrorChars = 1024;

    public PgWire RowDescription(IReadOnlyList<PgColumn> columns, Func<int, bool> binary)
    {
        Begin('T').Int16((short)columns.Count);
        for (var i = 0; i < columns.Count; i++)
            CString(columns[i].Name).Int32(0).Int16(0).Int32((int)columns[i].Type).Int16(PgValues.Length(columns[i].Type)).Int32(-1).Int16(binary(i) ? (short)1 : (short)0);
        return End();
    }

    public PgWire DataRow(IReadOnlyList<PgColumn> columns, object?[] row, Func<int, bool> binary)
    {
        Begin('D').Int16((short)row.Length);
        for (var i = 0; i < row.Length; i++)
        {
            if (row[i] is not { } v) { Int32(-1); continue; }
            var bytes = binary(i) ? PgValues.Binary(columns[i].Type, v) : PgValues.Text(columns[i].Type, v);
            Int32(bytes.Length).Bytes(bytes);
        }
        return End();
    }
}

/// <summary>
/// Reads the fields of a client message body. A field that runs past the body (a count or length the client lied about)
/// is a protocol violation that ends the connection, as PostgreSQL answers it, never an exception of the server's own.
/// </summary>
public ref struct PgReader(ReadOnlySpan<byte> body)
{
    private readonly ReadOnlySpan<byte> _body = body;
    private int _at;

    public bool End => _at >= _body.Length;
    public byte Byte() => Take(1)[0];
    public short Int16() => BinaryPrimitives.ReadInt16BigEndian(Take(2));

    /// <summary>A count of fields that follow (Int16): negative is malformed.</summary>
    public int Count() => Int16() is var n and >= 0 ? n
        : throw new PgException(PgException.ProtocolViolation, "invalid message format: a negative count", fatal: true);
    public int Int32() => BinaryPrimitives.ReadInt32BigEndian(Take(4));
    public ReadOnlySpan<byte> Bytes(int n) => Take(n);
    public ReadOnlySpan<byte> Rest() { var s = _body[_at..]; _at = _body.Length; return s; }

    private ReadOnlySpan<byte> Take(int n)
    {
        if (n < 0 || n > _body.Length - _at)
            throw new PgException(PgException.ProtocolViolation, "invalid message format: a field runs past the end of the message", fatal: true);
        var s = _body.Slice(_at, n);
        _at += n;
        return s;
    }

    public string CString()
    {
        var end = _body[_at..].IndexOf((byte)0);
        if (end < 0) throw new PgException(PgException.ProtocolViolation, "unterminated string in message", fatal: true);
        var s = Encoding.UTF8.GetString(_body.Slice(_at, end));
        _at += end + 1;
        return s;
    }
}
