using Magpie.EtlSinks;
using Magpie.Hosting;
using Magpie.Hosting.Security;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// sinks: queue ETL tasks publishing document changes to RabbitMQ or Kafka. Needs: a data directory (task
/// configuration and positions); the change feed — embedded when ingest runs in the same process, else
/// <c>magpie.changes</c> from Kafka.
/// </summary>
public sealed class EtlSinksModuleWiring(bool ingestInProcess) : IMagpieModule
{
    public string Name => "sinks";

    public string? Meter => EtlSinks.Tasks.EtlMetrics.MeterName;

    public string? Unmet(MagpieSettings settings) => !ingestInProcess && settings.Embedded
        ? "the sinks target alone reads magpie.changes from Kafka: set --kafka (or run --target all)"
        : null;

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security) => builder.Services.AddEtlSinks(Options(settings));

    public void Map(WebApplication app, MagpieSettings settings) => app.MapEtlSinks(Options(settings));

    private EtlOptions Options(MagpieSettings s) => new()
    {
        DataDir = Path.GetFullPath(s.DataDir),
        KafkaBootstrapServers = ingestInProcess || s.Embedded ? null : s.Kafka,
    };
}
