using System.Buffers;
using System.Buffers.Binary;
using System.Text;
using Magpie.Contracts.Changes;

namespace Magpie.Ingest.Documents;

/// <summary>
/// One entry of the change log (FasterLog). Layout, little-endian:
/// <c>[version:1][op:1][etag:8][lastModified unix ms:8][idLen:2][id][collLen:2][collection][document JSON…]</c>.
/// The document is the rest of the entry (empty for deletes), stored exactly as written.
/// </summary>
public readonly ref struct ChangeRecord
{
    private const byte FormatVersion = 1;

    /// <summary>
    /// Op byte of a bookkeeping entry that is not a document change: how far an input source (a Kafka
    /// topic partition) has been applied. Id = source, etag field = next offset, document = the offsets of
    /// that batch whose writes were rejected (ASCII, comma-separated). Change readers skip these entries.
    /// </summary>
    public const byte SourcePositionOp = 3;

    public static bool IsSourcePosition(ReadOnlySpan<byte> entry) => entry.Length > 1 && entry[1] == SourcePositionOp;
    private const int FixedHeader = 1 + 1 + 8 + 8;

    public ChangeOp Op { get; }
    public long Etag { get; }
    public DateTimeOffset LastModified { get; }
    public string Id { get; }
    public string Collection { get; }
    public ReadOnlySpan<byte> Document { get; }

    private ChangeRecord(ChangeOp op, long etag, DateTimeOffset lastModified, string id, string collection, ReadOnlySpan<byte> document)
    {
        Op = op; Etag = etag; LastModified = lastModified; Id = id; Collection = collection; Document = document;
    }

    public static ChangeRecord Decode(ReadOnlySpan<byte> entry)
    {
        if (entry.Length < FixedHeader + 4 || entry[0] != FormatVersion)
            throw new InvalidDataException($"change log entry has an unknown format (version byte {(entry.IsEmpty ? -1 : entry[0])})");
        var op = (ChangeOp)entry[1];
        var etag = BinaryPrimitives.ReadInt64LittleEndian(entry[2..]);
        var modified = DateTimeOffset.FromUnixTimeMilliseconds(BinaryPrimitives.ReadInt64LittleEndian(entry[10..]));
        var rest = entry[FixedHeader..];
        var id = ReadString(ref rest);
        var collection = ReadString(ref rest);
        return new ChangeRecord(op, etag, modified, id, collection, rest);
    }

    public static void Encode(IBufferWriter<byte> output, ChangeOp op, long etag, DateTimeOffset lastModified, string id, string collection, ReadOnlySpan<byte> document)
    {
        var idLen = Encoding.UTF8.GetByteCount(id);
        var collLen = Encoding.UTF8.GetByteCount(collection);
        var size = FixedHeader + 2 + idLen + 2 + collLen + document.Length;
        var span = output.GetSpan(size);
        span[0] = FormatVersion;
        span[1] = (byte)op;
        BinaryPrimitives.WriteInt64LittleEndian(span[2..], etag);
        BinaryPrimitives.WriteInt64LittleEndian(span[10..], lastModified.ToUnixTimeMilliseconds());
        var pos = FixedHeader;
        BinaryPrimitives.WriteUInt16LittleEndian(span[pos..], (ushort)idLen); pos += 2;
        pos += Encoding.UTF8.GetBytes(id, span[pos..]);
        BinaryPrimitives.WriteUInt16LittleEndian(span[pos..], (ushort)collLen); pos += 2;
        pos += Encoding.UTF8.GetBytes(collection, span[pos..]);
        document.CopyTo(span[pos..]);
        output.Advance(size);
    }

    private static string ReadString(ref ReadOnlySpan<byte> span)
    {
        var len = BinaryPrimitives.ReadUInt16LittleEndian(span);
        var s = Encoding.UTF8.GetString(span.Slice(2, len));
        span = span[(2 + len)..];
        return s;
    }
}
