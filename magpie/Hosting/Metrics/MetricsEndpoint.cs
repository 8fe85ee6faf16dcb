using Magpie.EtlSinks.Tasks;
using Magpie.Indexer.Indexing;
using Magpie.Ingest.Metrics;
using Magpie.Query;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using OpenTelemetry;
using OpenTelemetry.Metrics;

namespace Magpie.Hosting.Metrics;

/// <summary>
/// <c>GET /metrics</c> on every target: Magpie's own meters (each stage's, whichever this target runs), ASP.NET Core's
/// HTTP server metrics (requests by route and status, <c>http_server_request_duration_seconds</c>), Kestrel's
/// connections and the .NET runtime's (GC, thread pool, CPU).
/// </summary>
public static class MetricsEndpoint
{
    private static readonly string[] Meters =
    [
        IngestMetrics.MeterName, IndexingMetrics.MeterName, QueryMetrics.MeterName, EtlMetrics.MeterName,
        "Microsoft.AspNetCore.Hosting", "Microsoft.AspNetCore.Server.Kestrel", "System.Runtime",
    ];

    public static void AddMetricsEndpoint(this WebApplicationBuilder builder)
    {
        var exporter = new PrometheusTextExporter();
        builder.Services.AddSingleton(exporter);
        builder.Services.AddSingleton(_ => Sdk.CreateMeterProviderBuilder()
            .AddMeter(Meters)
            // promtool's lint reserves a _count suffix for histograms and summaries; these runtime gauges would trip it.
            .AddView("dotnet.assembly.count", new MetricStreamConfiguration { Name = "dotnet.assemblies.loaded" })
            .AddView("dotnet.process.cpu.count", new MetricStreamConfiguration { Name = "dotnet.process.cpus" })
            .AddView("dotnet.timer.count", new MetricStreamConfiguration { Name = "dotnet.timers.active" })
            .AddReader(new BaseExportingMetricReader(exporter) { TemporalityPreference = MetricReaderTemporalityPreference.Cumulative })
            .Build());
    }

    public static void MapMetricsEndpoint(this WebApplication app)
    {
        // Resolved at start, not on the first scrape: instruments only count from the moment the provider listens.
        app.Services.GetRequiredService<MeterProvider>();
        app.MapGet("/metrics", (PrometheusTextExporter exporter) =>
            Results.Text(exporter.Scrape(TimeSpan.FromSeconds(10)), "text/plain; version=0.0.4; charset=utf-8"));
    }
}
