using System.Globalization;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// The change-log address up to which the relay's messages were confirmed by Kafka. Written with
/// write-through and renamed into place, so a crash leaves either the old or the new value.
/// </summary>
public sealed class RelayPosition(string dir)
{
    private readonly string _path = Path.Combine(dir, "relay.position");

    public long? Load() => File.Exists(_path) && long.TryParse(File.ReadAllText(_path).Trim(), CultureInfo.InvariantCulture, out var a) ? a : null;

    public void Save(long address)
    {
        Directory.CreateDirectory(dir);
        var tmp = _path + ".tmp";
        using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write, FileShare.None, 256, FileOptions.WriteThrough))
        using (var w = new StreamWriter(f))
            w.Write(address.ToString(CultureInfo.InvariantCulture));
        File.Move(tmp, _path, overwrite: true);
    }
}
