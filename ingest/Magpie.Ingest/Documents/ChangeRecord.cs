using System.Buffers;
using System.Buffers.Binary;
using System.Text;
using Magpie.Contracts.Changes;

namespace Magpie.Ingest.Documents;

/// <summary>
/// One entry of the change log (FasterLog). Layout, little-endian:
/// <c>[version:1][op:1][etag:8][lastModified unix ms:8][previous:8][copyOf:8][idLen:2][id][collLen:2][collection][document JSON…]</c>.
/// The document is the rest of the entry (empty for deletes), stored exactly as written. <see cref="Previous"/>: the
/// address of the document's version before this one (0: none), the chain <c>GET /docs/{id}/revisions</c> walks.
/// <see cref="CopyOf"/>: for a version compaction copied forward, the address of the entry it copies (0: an original).
/// Version 1 entries (before compaction existed) have neither and still decode.
/// </summary>
public readonly ref struct ChangeRecord
{
    private const byte FormatVersion = 2, FormatVersion1 = 1;

    /// <summary>
    /// Op byte of a bookkeeping entry that is not a document change: how far an input source (a Kafka
    /// topic partition) has been applied. Id = source, etag field = next offset, document = the offsets of
    /// that batch whose writes were rejected (ASCII, comma-separated). Change readers skip these entries.
    /// </summary>
    public const byte SourcePositionOp = 3;

    public static bool IsSourcePosition(ReadOnlySpan<byte> entry) => entry.Length > 1 && entry[1] == SourcePositionOp;

    /// <summary>
    /// Op byte of a bookkeeping entry: the ids of the messages a queue sink applied in this commit (<see cref="MessageLedgers"/>).
    /// Id = the ledger (the sink), document = the message ids, one per line. Change readers skip these entries.
    /// </summary>
    public const byte MessageLedgerOp = 5;

    public static bool IsMessageLedger(ReadOnlySpan<byte> entry) => entry.Length > 1 && entry[1] == MessageLedgerOp;

    /// <summary>An entry that records how far the store got with its inputs, not a document: source positions and message ledgers.</summary>
    public static bool IsBookkeeping(ReadOnlySpan<byte> entry) => entry.Length > 1 && entry[1] is SourcePositionOp or MessageLedgerOp;

    /// <summary>
    /// Op byte of an older revision compaction copied forward to keep it (<c>Revisions</c> &gt; 1): history for the
    /// revisions API only. Change readers and recovery skip it; its document is the version as it was.
    /// </summary>
    public const byte RevisionOp = 4;

    public static bool IsRevision(ReadOnlySpan<byte> entry) => entry.Length > 1 && entry[1] == RevisionOp;

    /// <summary>The address of the entry this one copies (0: an original), without decoding the rest.</summary>
    public static long CopyOfAddress(ReadOnlySpan<byte> entry) =>
        entry.Length >= FixedHeader && entry[0] == FormatVersion ? BinaryPrimitives.ReadInt64LittleEndian(entry[26..]) : 0;

    private const int FixedHeader1 = 1 + 1 + 8 + 8, FixedHeader = FixedHeader1 + 8 + 8;

    public ChangeOp Op { get; }
    public long Etag { get; }
    public DateTimeOffset LastModified { get; }
    public string Id { get; }
    public string Collection { get; }
    public ReadOnlySpan<byte> Document { get; }
    public long Previous { get; }
    public long CopyOf { get; }

    private ChangeRecord(ChangeOp op, long etag, DateTimeOffset lastModified, long previous, long copyOf, string id, string collection, ReadOnlySpan<byte> document)
    {
        Op = op; Etag = etag; LastModified = lastModified; Previous = previous; CopyOf = copyOf; Id = id; Collection = collection; Document = document;
    }

    public static ChangeRecord Decode(ReadOnlySpan<byte> entry)
    {
        var version = entry.IsEmpty ? -1 : entry[0];
        var header = version == FormatVersion ? FixedHeader : FixedHeader1;
        if (entry.Length < header + 4 || version is not (FormatVersion or FormatVersion1))
            throw new InvalidDataException($"change log entry has an unknown format (version byte {version})");
        var op = (ChangeOp)entry[1];
        var etag = BinaryPrimitives.ReadInt64LittleEndian(entry[2..]);
        var modified = DateTimeOffset.FromUnixTimeMilliseconds(BinaryPrimitives.ReadInt64LittleEndian(entry[10..]));
        var (previous, copyOf) = version == FormatVersion
            ? (BinaryPrimitives.ReadInt64LittleEndian(entry[18..]), BinaryPrimitives.ReadInt64LittleEndian(entry[26..]))
            : (0L, 0L);
        var rest = entry[header..];
        var id = ReadString(ref rest);
        var collection = ReadString(ref rest);
        return new ChangeRecord(op, etag, modified, previous, copyOf, id, collection, rest);
    }

    public static void Encode(IBufferWriter<byte> output, ChangeOp op, long etag, DateTimeOffset lastModified, string id, string collection, ReadOnlySpan<byte> document,
        long previous = 0, long copyOf = 0)
    {
        var idLen = Encoding.UTF8.GetByteCount(id);
        var collLen = Encoding.UTF8.GetByteCount(collection);
        var size = FixedHeader + 2 + idLen + 2 + collLen + document.Length;
        var span = output.GetSpan(size);
        span[0] = FormatVersion;
        span[1] = (byte)op;
        BinaryPrimitives.WriteInt64LittleEndian(span[2..], etag);
        BinaryPrimitives.WriteInt64LittleEndian(span[10..], lastModified.ToUnixTimeMilliseconds());
        BinaryPrimitives.WriteInt64LittleEndian(span[18..], previous);
        BinaryPrimitives.WriteInt64LittleEndian(span[26..], copyOf);
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
