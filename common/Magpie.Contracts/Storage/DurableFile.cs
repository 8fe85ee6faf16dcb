namespace Magpie.Contracts.Storage;

/// <summary>
/// Replaces a small file so that a crash leaves either the old or the new content: written with
/// write-through to a temp file beside it, then renamed over the old one.
/// </summary>
public static class DurableFile
{
    public static void Write(string path, ReadOnlySpan<byte> content)
    {
        Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(path))!);
        var tmp = path + ".tmp";
        using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write, FileShare.None, 4096, FileOptions.WriteThrough))
            f.Write(content);
        File.Move(tmp, path, overwrite: true);
    }
}
