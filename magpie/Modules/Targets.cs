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

/// <summary>
/// Which modules each <c>--target</c> runs (Loki-style single binary), the only place that says so. A target is <c>all</c>, one
/// module, or modules joined by commas: <c>ingest,sinks</c> runs both in one process. Modules in one process talk in process: with
/// <c>ingest</c>, the indexer, the query module and the sinks read the local store's change feed and indexes (as <c>all</c> does).
/// Without <c>ingest</c>, each module goes through Kafka, and then only one module runs per process (two such modules in one
/// process would each register the same Kafka-side services).
/// </summary>
public static class Targets
{
    public static readonly string[] Modules = ["ingest", "indexer", "query", "sinks"];

    /// <summary>What <c>magpie run --list-targets</c> prints: each target, its modules, and what it needs.</summary>
    public static readonly (string Target, string Modules, string Needs)[] Described =
    [
        ("all", "ingest, indexer, query, sinks", "nothing: embedded, every module in one process (the default)"),
        ("ingest", "ingest", "a data directory; with --kafka, publishes changes to magpie.changes and reads magpie.documents"),
        ("indexer", "indexer", "--kafka: reads magpie.changes, owns the index shards of its partitions, answers query processes"),
        ("query", "query", "--kafka: finds the indexers through their consumer group, fans queries out (HTTP and PostgreSQL)"),
        ("sinks", "sinks", "--kafka: reads magpie.changes, runs the ETL tasks"),
        ("ingest,…", "ingest and any of indexer, query, sinks", "one process, the modules talking in process (e.g. ingest,sinks: writes and ETL on one box)"),
    ];

    /// <summary>The module names of <paramref name="target"/>, in pipeline order; throws <see cref="ArgumentException"/> saying what is wrong.</summary>
    public static IReadOnlyList<string> Parse(string target)
    {
        if (target.Trim() == "all") return Modules;
        var names = target.Split(',', StringSplitOptions.TrimEntries);
        foreach (var name in names)
            if (!Modules.Contains(name))
                throw new ArgumentException($"unknown target '{name}' in '{target}' (expected all, or one or more of {string.Join(", ", Modules)} joined by commas)");
        if (names.Distinct().Count() != names.Length) throw new ArgumentException($"target '{target}' names a module twice");
        if (names.Length > 1 && !names.Contains("ingest"))
            throw new ArgumentException($"target '{target}': modules without ingest talk through Kafka and run one per process; run them as separate processes, or add ingest");
        return [.. Modules.Where(names.Contains)];
    }

    public static IReadOnlyList<IMagpieModule> ModulesOf(string target)
    {
        var names = Parse(target);
        var ingest = names.Contains("ingest");
        // The indexer of the local store's feed holds every document: what this process's other modules ask.
        var localIndexer = ingest && names.Contains("indexer");
        var modules = new List<IMagpieModule>();
        if (ingest) modules.Add(new IngestModuleWiring(indexerInProcess: localIndexer));
        if (names.Contains("indexer")) modules.Add(new IndexerModuleWiring(ingestInProcess: ingest));
        if (names.Contains("query")) modules.Add(new QueryModuleWiring(indexerInProcess: localIndexer));
        if (names.Contains("sinks")) modules.Add(new EtlSinksModuleWiring(ingestInProcess: ingest));
        return modules;
    }

    /// <summary>Whether <paramref name="modules"/> call indexer processes over HTTP (and so need a service key once keys are on).</summary>
    public static bool CallsIndexers(IReadOnlyList<IMagpieModule> modules, bool embedded) =>
        !embedded && !modules.Any(m => m is IndexerModuleWiring) && modules.Any(m => m is QueryModuleWiring or IngestModuleWiring);
}
