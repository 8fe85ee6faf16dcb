using System.Text.Json;
using Magpie.Contracts.Storage;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// An output collection changes owner only when a replacement of its index starts serving: the replacement was built without
/// writing documents, and then writes every result and deletes the documents of keys only the version it replaced had. Those keys
/// are read from the replaced index while it is still open and kept in a file in the replacement's folder before the replaced one
/// goes, so a crash mid-way finishes the handover at the next start (writing the same documents again is harmless).
/// </summary>
public static class OutputHandover
{
    private const string FileName = "output-handover.json";

    /// <summary>Keeps the keys the replaced version held; the serving stage reads them when it loads (<see cref="ReduceWriter.HandOverAsync"/>).</summary>
    public static void Prepare(string directory, IEnumerable<string> replacedKeys)
    {
        Directory.CreateDirectory(directory);
        DurableFile.Write(Path.Combine(directory, FileName), JsonSerializer.SerializeToUtf8Bytes(replacedKeys.Distinct().ToList()));
    }

    public static IReadOnlyList<string>? Read(string directory)
    {
        var path = Path.Combine(directory, FileName);
        return File.Exists(path) ? JsonSerializer.Deserialize<List<string>>(File.ReadAllBytes(path)) ?? [] : null;
    }

    public static void Done(string directory) => File.Delete(Path.Combine(directory, FileName));
}
