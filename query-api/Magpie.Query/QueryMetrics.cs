using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace Magpie.Query;

/// <summary>What the query target reports on <c>/metrics</c> (meter <c>Magpie.Query</c>).</summary>
public static class QueryMetrics
{
    public const string MeterName = "Magpie.Query";
    private static readonly Meter Meter = new(MeterName);

    private static readonly double[] LatencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

    private static readonly Histogram<double> Duration = Meter.CreateHistogram("magpie.query.duration", "s",
        "Query latency by kind: page (POST /queries), facets, stream (whole streamed response), sql (a PostgreSQL-wire statement, rows sent).",
        advice: new InstrumentAdvice<double> { HistogramBucketBoundaries = LatencyBuckets });
    private static readonly Counter<long> StreamedBytes = Meter.CreateCounter<long>("magpie.query.streamed", "By",
        "Bytes of streamed results sent, by protocol (http: POST /streams/queries, pg: the PostgreSQL wire endpoint).");
    private static readonly UpDownCounter<long> PgSessions = Meter.CreateUpDownCounter<long>("magpie.pg.sessions", "{session}",
        "Open PostgreSQL-wire sessions.");

    /// <summary>Records the time since <paramref name="started"/> (a <see cref="Stopwatch"/> timestamp).</summary>
    public static void Queried(string kind, long started, bool failed = false) =>
        Duration.Record(Stopwatch.GetElapsedTime(started).TotalSeconds,
            new KeyValuePair<string, object?>("kind", kind), new KeyValuePair<string, object?>("outcome", failed ? "error" : "ok"));

    public static void Streamed(string protocol, long bytes) => StreamedBytes.Add(bytes, new KeyValuePair<string, object?>("protocol", protocol));

    public static void PgSessionOpened() => PgSessions.Add(1);
    public static void PgSessionClosed() => PgSessions.Add(-1);
}
