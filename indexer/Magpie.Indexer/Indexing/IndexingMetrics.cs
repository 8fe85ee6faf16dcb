using Magpie.Indexer.Indexing.Stages;
using System.Diagnostics.Metrics;

namespace Magpie.Indexer.Indexing;

/// <summary>
/// What the indexer reports on <c>/metrics</c> (meter <c>Magpie.Indexer</c>): batches and their stage times from
/// <see cref="IndexStatus"/>, and, when scraped, each index's backlog (changes of its feed not yet indexed: the
/// index's staleness and its consumer lag on magpie.changes, or on the mapped topic for a reduce side).
/// </summary>
public static class IndexingMetrics
{
    public const string MeterName = "Magpie.Indexer";
    private static readonly Meter Meter = new(MeterName);

    /// <summary>Batch stages take from a millisecond to many seconds.</summary>
    private static readonly double[] StageBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

    private static readonly Counter<long> Batches = Meter.CreateCounter<long>("magpie.indexing.batches", "{batch}",
        "Writer batches made searchable, per index.");
    private static readonly Counter<long> Documents = Meter.CreateCounter<long>("magpie.indexing.documents", "{document}",
        "Documents (puts and deletes) indexed, per index.");
    private static readonly Counter<long> Errors = Meter.CreateCounter<long>("magpie.indexing.errors", "{error}",
        "Documents a map or reduce script failed on, per index.");
    private static readonly Histogram<double> StageDuration = Meter.CreateHistogram("magpie.indexing.stage.duration", "s",
        "Time a writer batch spent in each stage, per index: read (waiting for changes), map, apply (the reduce of a map/reduce index, or publishing to the mapped topic on Kafka mode's map side), lucene (write and refresh), commit.",
        advice: new InstrumentAdvice<double> { HistogramBucketBoundaries = StageBuckets });

    public static void Batch(string index, IndexBatchStats stats)
    {
        var tag = new KeyValuePair<string, object?>("index", index);
        Batches.Add(1, tag);
        Documents.Add(stats.Documents, tag);
        Stage(index, "read", stats.ReadMs);
        Stage(index, "map", stats.MapMs);
        Stage(index, "apply", stats.ReduceMs);
        Stage(index, "lucene", stats.LuceneMs);
    }

    public static void Committed(string index, double ms) => Stage(index, "commit", ms);

    public static void Error(string index) => Errors.Add(1, new KeyValuePair<string, object?>("index", index));

    private static void Stage(string index, string stage, double ms) =>
        StageDuration.Record(ms / 1000, new KeyValuePair<string, object?>("index", index), new KeyValuePair<string, object?>("stage", stage));

    /// <summary>Gauges over the running workers; called once per process.</summary>
    public static void Observe(IndexRegistry registry)
    {
        Meter.CreateObservableGauge("magpie.index.backlog", () => Each(registry, w => w.Backlog()), "{change}",
            "Changes of the index's feed not yet indexed, per index, shard and side (0 = not stale).");
        Meter.CreateObservableGauge("magpie.reduce.backlog", () => Each(registry, w => w.Backlog(), reducersOnly: true), "{change}",
            "Map output of a map/reduce index not yet reduced, per index and shard (embedded: changes not yet mapped and reduced).");
        Meter.CreateObservableGauge("magpie.index.indexed_etag", () => Each(registry, w => w.Status.IndexedEtag), "{etag}",
            "The newest document etag each index shard has indexed.");
    }

    private static IEnumerable<Measurement<long>> Each(IndexRegistry registry, Func<IndexWorker, long?> value, bool reducersOnly = false)
    {
        foreach (var (name, side, reduces, worker) in registry.Running())
            if ((reduces || !reducersOnly) && value(worker) is { } v)
                yield return new Measurement<long>(v, new("index", name), new("shard", worker.Shard.ToString()), new("side", side));
    }
}
