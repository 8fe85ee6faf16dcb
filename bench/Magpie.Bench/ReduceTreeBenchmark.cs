using System.Diagnostics;
using Magpie.Indexer.MapReduce;
using Magpie.Scripting;

namespace Magpie.Bench;

/// <summary>
/// A reduce's update cost vs group size: one reduce key with 1k, 100k and 1M map entries (posts of one user:
/// count and score), built once; then the time to apply one changed document — its page and the path to the
/// root re-reduced by the JS aggregate on Jint — against a naive full re-reduce of the whole group with the
/// same aggregate, in the same run.
/// </summary>
public static class ReduceTreeBenchmark
{
    private const string Reduce = "groupBy(x => x.User).aggregate(g => ({ User: g.key, Count: g.values.reduce((n, v) => n + v.Count, 0), Score: g.values.reduce((s, v) => s + v.Score, 0) }))";

    public sealed record Row(int GroupSize, double TreeUpdateMs, double NaiveMs, long TreeReads, int Depth);

    public static List<Row> Run(IEnumerable<int> sizes, int updates)
    {
        var script = ReduceScript.Compile(Reduce, ScriptLimits.Default with { Timeout = TimeSpan.FromMinutes(5), MaxStatements = int.MaxValue, MaxAllocatedBytes = long.MaxValue });
        const string key = "\"users/1\"";
        var rows = new List<Row>();
        foreach (var size in sizes)
        {
            var tree = new ReduceTree(key, script.Aggregate);
            var entries = new List<string>(size);
            for (var i = 0; i < size; i++)
            {
                var entry = Entry(i % 50);
                entries.Add(entry);
                tree.Put($"posts/{i}", [entry]);
            }
            tree.Reduce();
            var random = new Random(size);
            var times = new List<double>();
            long reads = 0;
            for (var u = 0; u < updates; u++)
            {
                var doc = random.Next(size);
                var entry = Entry(random.Next(100));
                entries[doc] = entry;
                var started = Stopwatch.GetTimestamp();
                tree.Put($"posts/{doc}", [entry]);
                tree.Reduce();
                times.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
                reads = tree.LastReduceReads;
            }
            // The naive way: the whole group through the aggregate again (a few times; it is slow at 1M).
            var naive = new List<double>();
            for (var n = 0; n < Math.Min(updates, size >= 1_000_000 ? 3 : 10); n++)
            {
                var started = Stopwatch.GetTimestamp();
                var result = script.Aggregate(key, entries);
                naive.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
                if (result != tree.Result) throw new InvalidOperationException($"tree and naive reduce disagree at {size}: {tree.Result} vs {result}");
            }
            rows.Add(new Row(size, Median(times), Median(naive), reads, tree.Depth));
        }
        return rows;
    }

    private static string Entry(int score) => $$"""{"User":"users/1","Count":1,"Score":{{score}}}""";

    private static double Median(List<double> v)
    {
        v.Sort();
        return v[v.Count / 2];
    }
}
