using System.Diagnostics;
using System.Xml.Linq;
using Magpie.Contracts.Indexes;
using Magpie.Embeddings;

namespace Magpie.Bench;

/// <summary>
/// The built-in embedding model's cost: texts per CPU-second on the Stack Exchange sample's titles and bodies (in this process,
/// batches as the map stage makes them), and an index's build with <c>embedding.text(Title)</c> against the same map without it.
/// </summary>
public static class EmbeddingBenchmark
{
    public const string Plain = "Bench/Titles", Embedded = "Bench/TitleEmbeddings";

    public static IndexDefinition PlainDefinition => new() { Maps = ["map('Posts', p => ({ Title: p.Title }))"] };

    public static IndexDefinition EmbeddedDefinition => new() { Maps = ["map('Posts', p => ({ Title: createVector(embedding.text(p.Title)) }))"] };

    /// <summary>Texts per CPU-second and per wall-second embedding <paramref name="texts"/> in batches of 512 (a map stage's batch).</summary>
    public static async Task<(double PerCpuSecond, double PerSecond)> ThroughputAsync(IReadOnlyList<string> texts)
    {
        await BuiltInModel.Shared.EmbedAsync(texts.Take(32).ToList(), CancellationToken.None);   // loads the model
        var cpu = Process.GetCurrentProcess().TotalProcessorTime;
        var wall = Stopwatch.StartNew();
        foreach (var batch in texts.Chunk(512)) await BuiltInModel.Shared.EmbedAsync(batch, CancellationToken.None);
        var used = Process.GetCurrentProcess().TotalProcessorTime - cpu;
        return (texts.Count / used.TotalSeconds, texts.Count / wall.Elapsed.TotalSeconds);
    }

    /// <summary>An index reset and built again: its texts' vectors come from the embedding cache, not the model.</summary>
    public static async Task<TimeSpan> RebuildAsync(HttpClient http, string name, long n)
    {
        var watch = Stopwatch.StartNew();
        (await http.PostAsync($"indexes/{name}/reset", null)).EnsureSuccessStatusCode();
        await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(60), name);
        return watch.Elapsed;
    }

    /// <summary>The sample's question titles and post bodies (HTML as stored).</summary>
    public static (List<string> Titles, List<string> Bodies) Sample(string root)
    {
        var rows = XDocument.Load(Path.Combine(root, "..", "shared", "data", "stackexchange-history-meta", "Posts.xml")).Root!.Elements("row").ToList();
        return (rows.Select(r => (string?)r.Attribute("Title")).OfType<string>().ToList(), rows.Select(r => (string?)r.Attribute("Body") ?? "").Take(300).ToList());
    }
}
