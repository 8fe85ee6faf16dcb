using System.Globalization;
using System.Text;
using Magpie.Contracts.Storage;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// The change-log address up to which the relay's messages were confirmed by Kafka, and the etag of the
/// last of them. Replaced with <see cref="DurableFile"/>, so a crash leaves the old or the new value.
/// </summary>
public sealed class RelayPosition(string dir)
{
    private readonly string _path = Path.Combine(dir, "relay.position");

    public (long Address, long Etag)? Load()
    {
        if (!File.Exists(_path)) return null;
        var parts = File.ReadAllText(_path).Split(' ', StringSplitOptions.RemoveEmptyEntries);
        return parts.Length == 2 && long.TryParse(parts[0], CultureInfo.InvariantCulture, out var address) && long.TryParse(parts[1], CultureInfo.InvariantCulture, out var etag)
            ? (address, etag)
            : throw new InvalidDataException($"{_path} is not '<address> <etag>'");
    }

    public void Save(long address, long etag)
    {
        DurableFile.Write(_path, Encoding.UTF8.GetBytes(string.Create(CultureInfo.InvariantCulture, $"{address} {etag}")));
    }
}
