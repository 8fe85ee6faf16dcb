using Microsoft.AspNetCore.Builder;
using OpenTelemetry.Metrics;

namespace Magpie.Hosting.Metrics;

/// <summary>
/// <c>GET /metrics</c> on every target, by OpenTelemetry's Prometheus exporter: Magpie's own meters (each stage's,
/// whichever this target runs), ASP.NET Core's HTTP server metrics (requests by route and status,
/// <c>http_server_request_duration_seconds</c>), Kestrel's connections and the .NET runtime's (GC, thread pool, CPU).
/// </summary>
public static class MetricsEndpoint
{
    private static readonly string[] Framework = ["Microsoft.AspNetCore.Hosting", "Microsoft.AspNetCore.Server.Kestrel", "System.Runtime"];

    /// <param name="meters">The meters of the modules this target runs.</param>
    public static void AddMetricsEndpoint(this WebApplicationBuilder builder, IEnumerable<string> meters) =>
        builder.Services.AddOpenTelemetry().WithMetrics(metrics => metrics
            .AddMeter([.. meters, .. Framework])
            // promtool's lint reserves a _count suffix for histograms and summaries; these runtime gauges would trip it.
            .AddView("dotnet.assembly.count", new MetricStreamConfiguration { Name = "dotnet.assemblies.loaded" })
            .AddView("dotnet.process.cpu.count", new MetricStreamConfiguration { Name = "dotnet.process.cpus" })
            .AddView("dotnet.timer.count", new MetricStreamConfiguration { Name = "dotnet.timers.active" })
            .AddPrometheusExporter());

    public static void MapMetricsEndpoint(this WebApplication app) => app.MapPrometheusScrapingEndpoint("/metrics");
}
