using Magpie.Hosting;
using Magpie.Hosting.Security;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>A part of Magpie that a target can run. Each declares what it needs in one place.</summary>
public interface IMagpieModule
{
    string Name { get; }

    /// <summary>The module's own meter, exported on <c>/metrics</c> when the target runs it.</summary>
    string? Meter => null;

    /// <summary>Why this module can't run with these settings (e.g. needs Kafka in a split deployment), or null.</summary>
    string? Unmet(MagpieSettings settings) => null;

    void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security) { }

    void Map(WebApplication app, MagpieSettings settings) { }
}

/// <summary>Which modules each `--target` runs (Loki-style single binary). The only place that says so.</summary>
public static class Targets
{
    public static readonly string[] Names = ["all", "ingest", "indexer", "query", "sinks"];

    public static IReadOnlyList<IMagpieModule> ModulesOf(string target) => target switch
    {
        "all" => [new IngestModuleWiring(indexerInProcess: true), new IndexerModuleWiring(ingestInProcess: true), new QueryModuleWiring(indexerInProcess: true),
            new EtlSinksModuleWiring(ingestInProcess: true)],
        "ingest" => [new IngestModuleWiring(indexerInProcess: false)],
        "indexer" => [new IndexerModuleWiring(ingestInProcess: false)],
        "query" => [new QueryModuleWiring(indexerInProcess: false)],
        "sinks" => [new EtlSinksModuleWiring(ingestInProcess: false)],
        _ => throw new ArgumentException($"unknown target '{target}' (expected one of {string.Join(", ", Names)})"),
    };
}
