using System.Globalization;
using System.Text;
using Magpie.Contracts.Storage;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// The change-log address up to which the relay's messages were confirmed by Kafka, and the etag of the
/// last of them; for a partition's relay also the offset after its last message in that partition of <c>magpie.changes</c>
/// (how a process taking the partition back tells whether anyone else wrote to it since). Replaced with
/// <see cref="DurableFile"/>, so a crash leaves the old or the new value.
/// </summary>
public sealed class RelayPosition(string dir)
{
    private readonly string _path = Path.Combine(dir, "relay.position");

    public (long Address, long Etag, long? End)? Load()
    {
        if (!File.Exists(_path)) return null;
        var parts = File.ReadAllText(_path).Split(' ', StringSplitOptions.RemoveEmptyEntries);
        long end = -1;
        return parts.Length is 2 or 3 && long.TryParse(parts[0], CultureInfo.InvariantCulture, out var address) && long.TryParse(parts[1], CultureInfo.InvariantCulture, out var etag)
            && (parts.Length == 2 || long.TryParse(parts[2], CultureInfo.InvariantCulture, out end))
            ? (address, etag, end >= 0 ? end : null)
            : throw new InvalidDataException($"{_path} is not '<address> <etag> [<end offset>]'");
    }

    public void Save(long address, long etag, long? end = null)
    {
        Directory.CreateDirectory(Path.GetDirectoryName(_path)!);
        var text = end is { } e ? string.Create(CultureInfo.InvariantCulture, $"{address} {etag} {e}") : string.Create(CultureInfo.InvariantCulture, $"{address} {etag}");
        DurableFile.Write(_path, Encoding.UTF8.GetBytes(text));
    }
}
