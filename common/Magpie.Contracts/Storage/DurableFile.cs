namespace Magpie.Contracts.Storage;

/// <summary>
/// Replaces a small file so that a crash leaves either the old or the new content: written with
/// write-through to a temp file beside it, then renamed over the old one.
/// </summary>
public static class DurableFile
{
    /// <param name="ownerOnly">The file holds secrets (connection passwords): readable and writable by its owner only (0600).</param>
    public static void Write(string path, ReadOnlySpan<byte> content, bool ownerOnly = false)
    {
        Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(path))!);
        var tmp = path + ".tmp";
        var options = new FileStreamOptions { Mode = FileMode.Create, Access = FileAccess.Write, Share = FileShare.None, Options = FileOptions.WriteThrough };
        if (ownerOnly && !OperatingSystem.IsWindows()) options.UnixCreateMode = UnixFileMode.UserRead | UnixFileMode.UserWrite;
        using (var f = new FileStream(tmp, options))
            f.Write(content);
        // A file left by an older version keeps its mode on the move: the new one is the one that counts.
        if (ownerOnly && !OperatingSystem.IsWindows()) File.SetUnixFileMode(tmp, UnixFileMode.UserRead | UnixFileMode.UserWrite);
        File.Move(tmp, path, overwrite: true);
    }
}
