using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Storage;

namespace Magpie.EtlSinks.Tasks;

/// <summary>How far a task got: the change-feed position after the last batch the broker confirmed in full, and running totals.</summary>
public sealed record EtlTaskPosition(Dictionary<string, long> Next, long LastEtag, long MessagesSent, long DocumentsProcessed)
{
    public static EtlTaskPosition Beginning { get; } = new(new Dictionary<string, long>(), 0, 0, 0);

    public ChangeFeedPosition FeedPosition => new(Next);

    public static string PathOf(string dataDir, string task) => Path.Combine(dataDir, "etl", "positions", task + ".json");

    public static EtlTaskPosition Load(string path) =>
        File.Exists(path) ? JsonSerializer.Deserialize<EtlTaskPosition>(File.ReadAllBytes(path)) ?? Beginning : Beginning;

    public void Save(string path) => DurableFile.Write(path, JsonSerializer.SerializeToUtf8Bytes(this));
}
