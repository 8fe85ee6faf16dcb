using System.Text.Json;
using Confluent.Kafka;
using Magpie.Kafka;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Diagnostics.HealthChecks;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Magpie.Hosting.Health;

/// <summary>
/// <c>/healthz</c>: the process is alive and serving HTTP (nothing else is asked, so a busy dependency never gets a
/// live process restarted). <c>/readyz</c>: every readiness check of the target's modules passes — Kafka answering;
/// the document store has recovered before HTTP serves at all — 200 or 503, with each
/// check's verdict as JSON.
/// </summary>
public static class Readiness
{
    private const string Tag = "ready";

    /// <summary>A module's readiness check: <paramref name="problem"/> returns null when ready, else what is wrong.</summary>
    public static void AddReadinessCheck(this IServiceCollection services, string name, Func<IServiceProvider, CancellationToken, Task<string?>> problem) =>
        services.AddHealthChecks().Add(new HealthCheckRegistration(name, sp => new Check(sp, problem), HealthStatus.Unhealthy, [Tag], TimeSpan.FromSeconds(5)));

    /// <summary>Kafka answers a metadata request (split deployments; added once per process).</summary>
    public static void AddKafkaReadiness(this IServiceCollection services, string bootstrapServers)
    {
        var admin = new Lazy<IAdminClient>(() => new AdminClientBuilder(KafkaClients.Admin(bootstrapServers, "magpie-readiness")).SetLogHandler((_, _) => { }).Build());
        services.AddReadinessCheck("kafka", (_, _) => Task.Run(() =>
        {
            KafkaNative.EnsureLoaded();
            try { return admin.Value.GetMetadata(TimeSpan.FromSeconds(3)).Brokers.Count > 0 ? null : "Kafka answered with no brokers"; }
            catch (KafkaException e) { return $"Kafka at {bootstrapServers} unreachable: {e.Error.Reason}"; }
        }));
    }

    public static void MapHealthEndpoints(this WebApplication app, string target)
    {
        app.MapGet("/healthz", () => Results.Ok(new { status = "alive", target }));
        app.MapHealthChecks("/readyz", new HealthCheckOptions
        {
            Predicate = c => c.Tags.Contains(Tag),
            ResultStatusCodes = { [HealthStatus.Healthy] = 200, [HealthStatus.Degraded] = 200, [HealthStatus.Unhealthy] = 503 },
            ResponseWriter = (ctx, report) =>
            {
                ctx.Response.ContentType = "application/json";
                return ctx.Response.WriteAsync(JsonSerializer.Serialize(new
                {
                    status = report.Status == HealthStatus.Unhealthy ? "not ready" : "ready",
                    target,
                    checks = report.Entries.ToDictionary(e => e.Key, e => new
                    {
                        ready = e.Value.Status != HealthStatus.Unhealthy,
                        detail = e.Value.Description ?? e.Value.Exception?.Message,
                    }),
                }, JsonSerializerOptions.Web));
            },
        });
    }

    private sealed class Check(IServiceProvider services, Func<IServiceProvider, CancellationToken, Task<string?>> problem) : IHealthCheck
    {
        public async Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken ct = default) =>
            await problem(services, ct) is { } why ? HealthCheckResult.Unhealthy(why) : HealthCheckResult.Healthy("ok");
    }
}
