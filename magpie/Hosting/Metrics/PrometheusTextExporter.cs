using System.Globalization;
using System.Text;
using OpenTelemetry;
using OpenTelemetry.Metrics;

namespace Magpie.Hosting.Metrics;

/// <summary>
/// Writes what the OpenTelemetry SDK aggregated as Prometheus text exposition format 0.0.4, on demand (pull).
/// The NuGet mirror has the OpenTelemetry SDK but not OpenTelemetry.Exporter.Prometheus.AspNetCore (nor
/// prometheus-net), so the SDK does the aggregation and this class only the text format, following the
/// OpenTelemetry → Prometheus naming rules: dots become underscores, the unit becomes a suffix (s → seconds,
/// By → bytes, {annotations} dropped), monotonic sums get _total, histograms get cumulative _bucket/_sum/_count.
/// </summary>
[ExportModes(ExportModes.Pull)]
public sealed class PrometheusTextExporter : BaseExporter<Metric>, IPullMetricExporter
{
    private readonly Lock _scrape = new();
    private StringBuilder? _text;

    /// <summary>Set by the SDK's reader: collects every instrument and hands the batch to <see cref="Export"/>.</summary>
    public Func<int, bool>? Collect { get; set; }

    /// <summary>One scrape: collect now and return the exposition text.</summary>
    public string Scrape(TimeSpan timeout)
    {
        lock (_scrape)
        {
            _text = new StringBuilder(16 * 1024);
            try
            {
                if (Collect is not { } collect || !collect((int)timeout.TotalMilliseconds))
                    throw new TimeoutException($"metrics collection did not finish within {timeout.TotalSeconds:0} s");
                return _text.ToString();
            }
            finally { _text = null; }
        }
    }

    public override ExportResult Export(in Batch<Metric> batch)
    {
        if (_text is not { } text) return ExportResult.Failure;
        foreach (var metric in batch) Write(text, metric);
        return ExportResult.Success;
    }

    private static void Write(StringBuilder text, Metric metric)
    {
        var name = NameOf(metric);
        var type = metric.MetricType switch
        {
            MetricType.LongSum or MetricType.DoubleSum => "counter",
            MetricType.Histogram => "histogram",
            MetricType.ExponentialHistogram => null,   // not used by Magpie; Prometheus text has no form for it
            _ => "gauge",   // gauges and up-down counters
        };
        if (type is null) return;
        if (type == "counter") name += "_total";
        var help = string.IsNullOrWhiteSpace(metric.Description) ? metric.Name : metric.Description;
        text.Append("# HELP ").Append(name).Append(' ').Append(help.Replace("\\", @"\\").Replace("\n", @"\n")).Append('\n');
        text.Append("# TYPE ").Append(name).Append(' ').Append(type).Append('\n');
        foreach (ref readonly var point in metric.GetMetricPoints())
        {
            var labels = Labels(point);
            if (type == "histogram")
            {
                long cumulative = 0;
                foreach (var bucket in point.GetHistogramBuckets())
                {
                    cumulative += bucket.BucketCount;
                    var le = double.IsPositiveInfinity(bucket.ExplicitBound) ? "+Inf" : Number(bucket.ExplicitBound);
                    Sample(text, name + "_bucket", WithLabel(labels, "le", le), cumulative.ToString(CultureInfo.InvariantCulture));
                }
                Sample(text, name + "_sum", labels, Number(point.GetHistogramSum()));
                Sample(text, name + "_count", labels, point.GetHistogramCount().ToString(CultureInfo.InvariantCulture));
                continue;
            }
            var value = metric.MetricType switch
            {
                MetricType.LongSum or MetricType.LongSumNonMonotonic => point.GetSumLong().ToString(CultureInfo.InvariantCulture),
                MetricType.DoubleSum or MetricType.DoubleSumNonMonotonic => Number(point.GetSumDouble()),
                MetricType.LongGauge => point.GetGaugeLastValueLong().ToString(CultureInfo.InvariantCulture),
                _ => Number(point.GetGaugeLastValueDouble()),
            };
            Sample(text, name, labels, value);
        }
    }

    private static void Sample(StringBuilder text, string name, string labels, string value) =>
        text.Append(name).Append(labels.Length > 0 ? "{" + labels + "}" : "").Append(' ').Append(value).Append('\n');

    private static string Labels(in MetricPoint point)
    {
        var labels = new StringBuilder();
        foreach (var tag in point.Tags)
        {
            if (labels.Length > 0) labels.Append(',');
            labels.Append(Sanitize(tag.Key)).Append("=\"").Append(Escape(Convert.ToString(tag.Value, CultureInfo.InvariantCulture) ?? "")).Append('"');
        }
        return labels.ToString();
    }

    private static string WithLabel(string labels, string name, string value) =>
        (labels.Length > 0 ? labels + "," : "") + name + "=\"" + value + "\"";

    /// <summary>OpenTelemetry → Prometheus: sanitized name plus the unit as a suffix, unless the name already ends with it.</summary>
    public static string NameOf(Metric metric)
    {
        var name = Sanitize(metric.Name);
        var unit = UnitSuffix(metric.Unit);
        return unit is null || name.EndsWith("_" + unit, StringComparison.Ordinal) ? name : name + "_" + unit;
    }

    private static string? UnitSuffix(string? unit) => unit switch
    {
        null or "" or "1" => null,
        _ when unit.StartsWith('{') => null,   // annotations such as {document} are not units
        "s" => "seconds",
        "ms" => "milliseconds",
        "By" => "bytes",
        _ => Sanitize(unit),
    };

    private static string Sanitize(string name)
    {
        var b = new StringBuilder(name.Length);
        foreach (var c in name) b.Append(char.IsAsciiLetterOrDigit(c) || c == '_' ? c : '_');
        if (b.Length > 0 && char.IsAsciiDigit(b[0])) b.Insert(0, '_');
        return b.ToString();
    }

    private static string Escape(string value) => value.Replace("\\", @"\\").Replace("\"", "\\\"").Replace("\n", @"\n");

    private static string Number(double v) => double.IsPositiveInfinity(v) ? "+Inf" : double.IsNegativeInfinity(v) ? "-Inf"
        : double.IsNaN(v) ? "NaN" : v.ToString("R", CultureInfo.InvariantCulture);
}
