using System.Diagnostics;
using System.Net.Http.Json;
using System.Numerics.Tensors;
using System.Text;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Producers;

namespace Magpie.Bench;

/// <summary>
/// Vector search figures: n vectors of 384 dimensions (deterministic, clustered), top-20 by cosine, exact, unfiltered and with a
/// filter keeping a tenth, from 1 client and 16; beside them, in this process, a plain <see cref="TensorPrimitives"/> loop over the
/// same vectors (the floor an exact scan can reach); int8 and binary copies' recall@20 and speed; the memory the vectors take.
/// </summary>
public static class VectorBenchmark
{
    public const int Dimensions = 384;
    public const string Exact = "Bench/Vectors", Int8 = "Bench/VectorsInt8", Binary = "Bench/VectorsBinary";

    private static IndexDefinition Definition(string quantization) => new()
    {
        Maps = ["map('Vectors', v => ({ Category: v.Category, Vector: createVector(v.Vector) }))"],
        Fields = new() { ["Vector"] = new IndexFieldOptions { Indexing = IndexFieldOptions.No, Vector = new VectorFieldOptions { Dimensions = Dimensions, Quantization = quantization } } },
    };

    public static IndexDefinition ExactDefinition => Definition(VectorFieldOptions.None);
    public static IndexDefinition Int8Definition => Definition(VectorFieldOptions.Int8);
    public static IndexDefinition BinaryDefinition => Definition(VectorFieldOptions.Binary);

    /// <summary>Vector i: one of 64 cluster centres plus noise (seeded), so nearest neighbours are not all equally far.</summary>
    public static float[] VectorOf(int i)
    {
        var centre = new Random(i % 64);
        var noise = new Random(1_000_000 + i);
        var v = new float[Dimensions];
        for (var d = 0; d < Dimensions; d++) v[d] = (float)(centre.NextDouble() * 2 - 1 + (noise.NextDouble() - 0.5) * 0.8);
        return v;
    }

    public static float[] Query(int q) => VectorOf(q * 7919 + 3).Select((x, d) => x + (d % 5 == 0 ? 0.3f : -0.05f)).ToArray();

    public static IReadOnlyList<DocumentWrite[]> Documents(int n) => Enumerable.Range(0, n).Select(i =>
    {
        var base64 = Convert.ToBase64String(System.Runtime.InteropServices.MemoryMarshal.AsBytes(VectorOf(i).AsSpan()));
        return DocumentWrite.Put($"vectors/{i}", Encoding.UTF8.GetBytes($$"""{"Category":{{i % 10}},"Vector":"{{base64}}"}"""));
    }).Chunk(256).ToList();

    /// <summary>The raw side: every vector in one array, scanned by <see cref="TensorPrimitives.CosineSimilarity(ReadOnlySpan{float}, ReadOnlySpan{float})"/>, the best 20 kept.</summary>
    public sealed class Raw(int n)
    {
        private readonly float[] _all = Enumerable.Range(0, n).SelectMany(VectorOf).ToArray();

        public long Bytes => 4L * _all.Length;

        public List<int> Top(float[] q, int k, bool filtered)
        {
            var best = new PriorityQueue<int, float>(k + 1);
            for (var i = 0; i < n; i++)
            {
                if (filtered && i % 10 != 3) continue;
                var s = TensorPrimitives.CosineSimilarity(_all.AsSpan(i * Dimensions, Dimensions), q);
                if (best.Count < k) best.Enqueue(i, s);
                else if (best.TryPeek(out _, out var worst) && s > worst) best.EnqueueDequeue(i, s);
            }
            var top = new List<(int, float)>();
            while (best.TryDequeue(out var i, out var s)) top.Add((i, s));
            return top.OrderByDescending(t => t.Item2).Select(t => t.Item1).ToList();
        }
    }

    /// <summary>The top 20 (or <paramref name="k"/>); <paramref name="exact"/>: <c>exact(vector.search(…))</c>, every vector compared, else through the graphs.</summary>
    public static string Rql(string index, bool filtered, bool exact = true, int k = 20) =>
        $"from index '{index}' where {(exact ? $"exact(vector.search(Vector, $q, -1, {k}))" : $"vector.search(Vector, $q, -1, {k})")}{(filtered ? " and Category = 3" : "")}";

    public static async Task<List<string>> AskAsync(HttpClient http, string index, float[] q, bool filtered, bool exact = true, int k = 20)
    {
        var r = await http.PostAsJsonAsync("queries", new { query = Rql(index, filtered, exact, k), parameters = new { q }, pageSize = k });
        r.EnsureSuccessStatusCode();
        return (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("results").EnumerateArray()
            .Select(x => x.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();
    }

    public static Task<List<double>> LatencyAsync(HttpClient http, string index, bool filtered, int clients, TimeSpan duration, bool exact = true)
    {
        var next = 0;
        return IndexBenchmark.TimedAsync(async () =>
        {
            var q = Query(Interlocked.Increment(ref next) % 100);
            var r = await http.PostAsJsonAsync("queries", new { query = Rql(index, filtered, exact), parameters = new { q }, pageSize = 20 });
            if (!r.IsSuccessStatusCode) throw new InvalidOperationException($"{(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
        }, clients, duration);
    }

    /// <summary>
    /// Searches through the graphs until every segment's is built: the first search asks for them, they are built in the
    /// background; done when the index's stats show none pending after a search. Returns how long that took, the graphs, the
    /// vectors they hold and their files' bytes.
    /// </summary>
    public static async Task<(TimeSpan Took, int Graphs, long Vectors, long Bytes)> GraphsBuiltAsync(HttpClient http, string index, string dataDir)
    {
        var watch = Stopwatch.StartNew();
        while (watch.Elapsed < TimeSpan.FromMinutes(60))
        {
            await AskAsync(http, index, Query(0), filtered: false, exact: false);
            var stats = await http.GetFromJsonAsync<JsonElement>($"indexes/{index}/stats");
            if (stats.GetProperty("vectorGraphs") is { ValueKind: JsonValueKind.Object } graphs && graphs.GetProperty("pending").GetInt32() == 0)
            {
                var bytes = Directory.GetFiles(dataDir, "*.usearch", SearchOption.AllDirectories).Sum(f => new FileInfo(f).Length);
                return (watch.Elapsed, graphs.GetProperty("built").GetInt32(), graphs.GetProperty("vectors").GetInt64(), bytes);
            }
            await Task.Delay(1000);
        }
        throw new TimeoutException("the vector graphs were not built within an hour");
    }

    public static Task<List<double>> RawLatencyAsync(Raw raw, bool filtered, int clients, TimeSpan duration)
    {
        var next = 0;
        return IndexBenchmark.TimedAsync(() => Task.Run(() => raw.Top(Query(Interlocked.Increment(ref next) % 100), 20, filtered)), clients, duration);
    }

    /// <summary>Seconds the index took to hold every vector.</summary>
    public static async Task<TimeSpan> IndexAsync(HttpClient http, string name, IndexDefinition definition, long n)
    {
        var watch = Stopwatch.StartNew();
        await IndexBenchmark.DefineAsync(http, name, definition);
        await IndexBenchmark.WaitIndexedAsync([http], n, TimeSpan.FromMinutes(60), name);
        return watch.Elapsed;
    }
}
