using System.Text;
using Magpie.Contracts.Documents;

namespace Magpie.Kafka.Documents;

/// <summary>
/// The partition of <c>magpie.documents</c> and <c>magpie.changes</c> a document belongs to, and so the ingest process that owns
/// it: Kafka's default key placement (murmur2 of the key, as the Java client and Magpie's producers place keys), over the id
/// case-folded, since ids compare case-insensitively and every spelling of one id must land on one partition. A producer that
/// keys messages by the id in lower case with the default partitioner puts each message on its document's partition.
/// </summary>
public static class DocumentPartitioner
{
    public static int PartitionOf(string id, int partitions)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(partitions, 1);
        return (Murmur2(Encoding.UTF8.GetBytes(DocumentId.Fold(id))) & 0x7fffffff) % partitions;
    }

    /// <summary>Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2, librdkafka's rd_murmur2), seed 0x9747b28c.</summary>
    public static int Murmur2(ReadOnlySpan<byte> data)
    {
        unchecked
        {
            const int m = 0x5bd1e995;
            const int r = 24;
            var length = data.Length;
            var h = (int)0x9747b28c ^ length;
            for (var i = 0; i + 4 <= length; i += 4)
            {
                var k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24;
                k *= m;
                k ^= (int)((uint)k >> r);
                k *= m;
                h *= m;
                h ^= k;
            }
            var tail = length & ~3;
            switch (length % 4)
            {
                case 3:
                    h ^= data[tail + 2] << 16;
                    goto case 2;
                case 2:
                    h ^= data[tail + 1] << 8;
                    goto case 1;
                case 1:
                    h ^= data[tail];
                    h *= m;
                    break;
            }
            h ^= (int)((uint)h >> 13);
            h *= m;
            h ^= (int)((uint)h >> 15);
            return h;
        }
    }
}
