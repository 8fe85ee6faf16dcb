using Magpie.EtlSinks;
using Magpie.EtlSinks.Http;
using Magpie.Hosting;
using Magpie.Hosting.Security;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>
/// sinks: queue ETL tasks publishing document changes to RabbitMQ or Kafka, and queue sinks writing what RabbitMQ queues or
/// Kafka topics carry into the store. Needs: a data directory (configuration and positions); the change feed — embedded when
/// ingest runs in the same process, else <c>magpie.changes</c> from Kafka; for queue sinks, the store — in process, or
/// ingest's API at <c>IngestUrl</c>.
/// </summary>
public sealed class EtlSinksModuleWiring(bool ingestInProcess) : IMagpieModule
{
    public string Name => "sinks";

    public string? Meter => EtlSinks.Runners.RunnerMetrics.MeterName;

    public string? Unmet(MagpieSettings settings) => !ingestInProcess && settings.Embedded
        ? "the sinks target alone reads magpie.changes from Kafka: set --kafka (or run --target all)"
        : null;

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security) => builder.Services.AddEtlSinks(Options(settings) with
    {
        // Queue sinks without a store in this process write through ingest's API (POST /message_writes) with the service key.
        Ingest = !ingestInProcess && settings.IngestUrl is { } url ? new Magpie.Http.IngestClient(url, security.PeerClient(TimeSpan.FromMinutes(1))) : null,
    });

    public void Map(WebApplication app, MagpieSettings settings) => app.MapEtlSinks(Options(settings));

    private EtlOptions Options(MagpieSettings s) => new()
    {
        DataDir = Path.GetFullPath(s.DataDir),
        KafkaBootstrapServers = ingestInProcess || s.Embedded ? null : s.Kafka,
    };
}
