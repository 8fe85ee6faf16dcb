using System.Globalization;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// The change-log address up to which the relay's messages were confirmed by Kafka, and the etag of the
/// last of them. Written with write-through and renamed into place, so a crash leaves the old or the new value.
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
        Directory.CreateDirectory(dir);
        var tmp = _path + ".tmp";
        using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write, FileShare.None, 256, FileOptions.WriteThrough))
        using (var w = new StreamWriter(f))
            w.Write(string.Create(CultureInfo.InvariantCulture, $"{address} {etag}"));
        File.Move(tmp, _path, overwrite: true);
    }
}
