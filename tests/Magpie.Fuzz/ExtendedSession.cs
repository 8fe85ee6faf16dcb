using System.Buffers.Binary;
using System.Text;

namespace Magpie.Fuzz;

/// <summary>Turns fuzz bytes into a well-framed PostgreSQL session: a startup message, then extended-protocol messages the bytes pick.</summary>
public static class ExtendedSession
{
    private static readonly string[] Statements =
    [
        "SELECT 1", "SELECT $1", "select Title from Posts where Score > $1", "from Posts where Title = $1", "SHOW server_version",
        "SELECT * FROM information_schema.tables", "BEGIN", "DEALLOCATE ALL", "", ";", "SELECT '$1'", "from Posts where id() in ($1, $2)",
    ];

    public static byte[] Frame(byte[] input)
    {
        var bytes = new Cursor(input);
        var frame = new MemoryStream();
        Message(frame, null, w =>
        {
            w.Write(BinaryPrimitives.ReverseEndianness(196608));   // protocol 3.0
            CString(w, "user"); CString(w, "fuzz"); CString(w, "database"); CString(w, "magpie"); w.Write((byte)0);
        });
        while (!bytes.Done)
        {
            switch (bytes.Next() % 9)
            {
                case 0: Message(frame, 'P', w => { CString(w, bytes.Name()); CString(w, bytes.Sql()); Int16(w, bytes.Next() % 3); for (var i = 0; i < 2; i++) Int32(w, bytes.Next() % 2 == 0 ? 25 : 23); }); break;
                case 1:
                    Message(frame, 'B', w =>
                    {
                        CString(w, bytes.Name()); CString(w, bytes.Name());
                        Int16(w, 1); Int16(w, bytes.Next() % 2);
                        var n = bytes.Next() % 3;
                        Int16(w, n);
                        for (var i = 0; i < n; i++)
                        {
                            if (bytes.Next() % 5 == 0) { Int32(w, -1); continue; }
                            var value = bytes.Text();
                            Int32(w, value.Length);
                            w.Write(value);
                        }
                        Int16(w, 0);
                    });
                    break;
                case 2: Message(frame, 'D', w => { w.Write((byte)(bytes.Next() % 2 == 0 ? 'S' : 'P')); CString(w, bytes.Name()); }); break;
                case 3: Message(frame, 'E', w => { CString(w, bytes.Name()); Int32(w, bytes.Next() % 4); }); break;
                case 4: Message(frame, 'C', w => { w.Write((byte)(bytes.Next() % 2 == 0 ? 'S' : 'P')); CString(w, bytes.Name()); }); break;
                case 5: Message(frame, 'S', _ => { }); break;
                case 6: Message(frame, 'H', _ => { }); break;
                case 7: Message(frame, 'Q', w => CString(w, bytes.Sql())); break;
                case 8:
                    // A burst: many statements (or big ones) under fresh names, past the session's caps.
                    var count = 1 + bytes.Next() * 8;
                    var size = bytes.Next() % 2 == 0 ? 16 : 40_000;
                    for (var i = 0; i < count; i++)
                        Message(frame, 'P', w => { CString(w, $"burst{i}_{frame.Length}"); CString(w, "SELECT '" + new string('x', size) + "'"); Int16(w, 0); });
                    break;
            }
        }
        Message(frame, 'S', _ => { });
        return frame.ToArray();
    }

    private static void Message(Stream out_, char? type, Action<BinaryWriter> body)
    {
        var payload = new MemoryStream();
        using (var w = new BinaryWriter(payload, Encoding.UTF8, leaveOpen: true)) body(w);
        if (type is { } t) out_.WriteByte((byte)t);
        Span<byte> length = stackalloc byte[4];
        BinaryPrimitives.WriteInt32BigEndian(length, (int)payload.Length + 4);
        out_.Write(length);
        payload.Position = 0;
        payload.CopyTo(out_);
    }

    private static void CString(BinaryWriter w, string s) { w.Write(Encoding.UTF8.GetBytes(s.Replace('\0', ' '))); w.Write((byte)0); }
    private static void Int16(BinaryWriter w, int v) => w.Write(BinaryPrimitives.ReverseEndianness((short)v));
    private static void Int32(BinaryWriter w, int v) => w.Write(BinaryPrimitives.ReverseEndianness(v));

    private sealed class Cursor(byte[] input)
    {
        private int _at;
        public bool Done => _at >= input.Length;
        public int Next() => _at < input.Length ? input[_at++] : 0;

        public string Name() => (Next() % 6) switch { 0 => "", 5 => Text(16) is var t ? Encoding.UTF8.GetString(t) : "", var n => $"s{n}" };

        public string Sql() => Next() % 4 == 0 ? Encoding.UTF8.GetString(Text(64)) : Statements[Next() % Statements.Length];

        public byte[] Text(int max = 32)
        {
            var n = Math.Min(Next() % (max + 1), input.Length - _at);
            var bytes = input.AsSpan(_at, n).ToArray();
            _at += n;
            return bytes;
        }

        public string Text() => Encoding.UTF8.GetString(Text(32));
    }
}
