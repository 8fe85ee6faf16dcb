using System.Threading.RateLimiting;
using Magpie.Contracts;
using Magpie.Hosting;
using Magpie.Hosting.Health;
using Magpie.Hosting.Metrics;
using Magpie.Hosting.Security;
using Magpie.Kafka;
using Magpie.Security;
using Magpie.Http;
using Magpie.Modules;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.RateLimiting;

namespace Magpie;

/// <summary>The composition root: builds the process for one target, the shared HTTP plumbing (<c>Hosting/</c>), then the target's modules (<c>Modules/</c>).</summary>
public static class MagpieHost
{
    public static WebApplicationBuilder CreateBuilder() => WebApplication.CreateBuilder(new WebApplicationOptions
    {
        Args = [],
        ContentRootPath = AppContext.BaseDirectory,
    });

    public static MagpieSettings ReadSettings(WebApplicationBuilder builder) =>
        builder.Configuration.GetSection("Magpie").Get<MagpieSettings>() ?? new MagpieSettings();

    public static WebApplication Build(WebApplicationBuilder builder, MagpieSettings settings)
    {
        var modules = ModuleGraph.ModulesOf(settings.Target);
        builder.Logging.ClearProviders();
        builder.Logging.AddSimpleConsole(o => { o.SingleLine = true; o.TimestampFormat = "HH:mm:ss "; });
        // A start that fails (a port in use) is told in one line by `magpie run`, not also as the host's stack trace.
        builder.Logging.AddFilter("Microsoft.Extensions.Hosting.Internal.Host", LogLevel.Critical);
        var startup = LoggerFactory.Create(l => l.AddSimpleConsole(o => o.SingleLine = true)).CreateLogger("Magpie");
        if (SettingsCheck.Problem(settings) is { } outOfRange) throw new ModuleUnmetException(outOfRange);
        foreach (var m in modules)
            if (m.Unmet(settings) is { } why) throw new ModuleUnmetException($"module '{m.Name}' can't start: {why}");
        if (settings.PartitionedStore && modules.Any(m => m is not (DocumentStoreWiring or ChangeFeedWiring)))
            throw new ModuleUnmetException($"PartitionedStore runs the store across ingest processes, each holding some of the documents: run it with --target ingest alone, not '{settings.Target}' (indexer, query and sinks run as their own targets and reach the store through Kafka and any ingest process)");
        var security = HostSecurity.From(settings, ModuleGraph.CallsIndexers(modules, settings.Embedded));
        if (!settings.Embedded) KafkaClients.UseCluster(settings.Kafka!, settings.KafkaClient);
        if (settings.Unsecured && !security.Loopback)
            startup.LogWarning("--unsecured: listening on {Address} with no API key required; anyone who reaches port {Port} can read, write, define indexes and ETL", settings.BindAddress, settings.HttpPort);

        builder.WebHost.ConfigureKestrel(k =>
        {
            security.Listen(k, settings.HttpPort);
            k.Limits.MaxRequestBodySize = settings.MaxRequestBodyBytes;
            k.Limits.MinRequestBodyDataRate = new Microsoft.AspNetCore.Server.Kestrel.Core.MinDataRate(settings.MinRequestBodyBytesPerSecond, TimeSpan.FromSeconds(5));
            k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(settings.RequestHeadersTimeoutSeconds);
        });
        // Any document the store accepted can be written back; text comes back unescaped (WireJson).
        builder.Services.ConfigureHttpJsonOptions(o => WireJson.Configure(o.SerializerOptions));
        builder.Services.AddSingleton(security.Keys).AddSingleton<FailedLogins>();
        builder.Services.AddClientErrors();
        builder.Services.AddRateLimiter(o =>
        {
            // Shed load instead of queueing without bound (ARCHITECTURE.md: bounded concurrency everywhere).
            // Large uploads are admitted apart (a quarter of the slots): bodies that arrive slowly, on purpose or not, then hold only
            // upload slots, and reads and small writes keep theirs (560 trickled 16 MB uploads once took every slot: GETs got 503).
            o.GlobalLimiter = PartitionedRateLimiter.Create<HttpContext, string>(ctx => Admission.IsLargeUpload(ctx.Request)
                ? RateLimitPartition.GetConcurrencyLimiter("uploads", _ => new ConcurrencyLimiterOptions
                    { PermitLimit = Math.Max(1, settings.MaxConcurrentRequests / 4), QueueLimit = settings.RequestQueueLimit / 4 })
                : RateLimitPartition.GetConcurrencyLimiter("requests", _ => new ConcurrencyLimiterOptions
                    { PermitLimit = settings.MaxConcurrentRequests, QueueLimit = settings.RequestQueueLimit }));
            o.RejectionStatusCode = StatusCodes.Status503ServiceUnavailable;
            o.OnRejected = async (ctx, ct) =>
            {
                ctx.HttpContext.Response.Headers.RetryAfter = "1";
                await Problems.Create(503, "Server busy", "too many requests in flight; retry after the Retry-After delay")
                    .ExecuteAsync(ctx.HttpContext);
            };
        });
        builder.AddMetricsEndpoint(modules.Select(m => m.Meter).OfType<string>());
        builder.Services.AddHealthChecks();
        if (!settings.Embedded) builder.Services.AddKafkaReadiness(settings.Kafka!);
        foreach (var m in modules) m.AddServices(builder, settings, security);

        var app = builder.Build();
        app.UseRequestLog();
        app.UseClientErrors();
        app.UseApiKeys(security.Keys, app.Services.GetRequiredService<FailedLogins>(), security.KeysRequiredWithoutKeys);
        app.UseCrossOriginWriteRefusal(settings.AllowedOrigins);
        app.UseJsonBodiesOnly();
        app.UseRateLimiter();
        app.MapGet("/health", () => Results.Ok(new { status = "ok", target = settings.Target, modules = modules.Select(m => m.Name) }));
        app.MapHealthEndpoints(settings.Target);
        app.MapMetricsEndpoint();
        app.MapKeyEndpoints();
        foreach (var m in modules) m.Map(app, settings);
        app.Lifetime.ApplicationStarted.Register(() => startup.LogInformation(
            "magpie target '{Target}' ({Mode}) listening on {Scheme}://{Address}:{Port}, {Auth}, data in {DataDir}",
            settings.Target, settings.Embedded ? "embedded" : $"kafka {settings.Kafka}", security.Scheme, settings.BindAddress, settings.HttpPort,
            security.Keys.Any ? $"{security.Keys.All.Count} API key(s)" : "no API key (open to loopback)", Path.GetFullPath(settings.DataDir)));
        return app;
    }
}
