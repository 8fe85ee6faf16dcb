using Magpie.Hosting;
using Magpie.Hosting.Security;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>A part of Magpie a target can run: its wiring, and what it needs from the settings.</summary>
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

/// <summary>Where the modules of one process are: what a module's wiring asks to choose between in-process and Kafka.</summary>
/// <param name="Store">The document store runs here: the change feed is its log, and reads and writes are in process.</param>
/// <param name="WholeIndex">The indexer here holds every shard (it indexes the local store's feed): queries need no other process.</param>
public sealed record ProcessLayout(bool Store, bool WholeIndex);

/// <summary>
/// Every module, what it needs, and which modules each <c>--target</c> names (Loki's <c>modules.go</c> is the model); the only
/// place that says so. A target is <c>all</c>, one target, or targets joined by commas: the process runs the named modules and
/// every module they need, each once, in this declaration order (dependencies first). Modules in one process talk in process:
/// with <c>ingest</c>, the indexer, the query module and the sinks read the local store's change feed and indexes (as
/// <c>all</c> does). Without <c>ingest</c>, they go through Kafka as separate processes would (<c>indexer,query</c>: the query
/// module asks this process's indexer over HTTP like any other owner of shards).
/// </summary>
public static class ModuleGraph
{
    /// <summary>A module: its name, the modules it needs, what it is, and its wiring for a process's layout.</summary>
    public sealed record Node(string Name, string[] Needs, string What, Func<ProcessLayout, IMagpieModule> Wiring);

    /// <summary>Dependencies before the modules that need them.</summary>
    public static readonly Node[] Nodes =
    [
        new("documents", [], "the document store on FASTER, the write API; with Kafka, the magpie.documents consumer",
            p => new DocumentStoreWiring(indexerInProcess: p.WholeIndex)),
        new("change-feed", ["documents"], "the store's log as a feed: embedded for this process's stages, compacted; with Kafka, relayed to magpie.changes",
            p => new ChangeFeedWiring(indexerInProcess: p.WholeIndex)),
        new("index-definitions", [], "index definitions: a file embedded, the compacted magpie.indexes with Kafka",
            p => new IndexDefinitionsWiring(embedded: p.WholeIndex)),
        new("document-filters", [], "a document run through a definition and a query one at a time (subscriptions, operations)",
            p => new DocumentFiltersWiring(embedded: p.WholeIndex)),
        new("indexer", ["index-definitions"], "one worker per index and shard, Lucene.Net in process, the /indexes API",
            p => new IndexerModuleWiring(ingestInProcess: p.Store)),
        new("shard-search", ["indexer"], "searches of the shards this process holds; with Kafka, POST /shards/queries for query processes",
            p => new ShardSearchWiring(answersQueryProcesses: !p.WholeIndex)),
        new("query", ["index-definitions", "document-filters"], "RQL over HTTP (paged, streamed), facets, subscriptions, operations; fans out to the shards' owners",
            p => new QueryModuleWiring(indexerInProcess: p.WholeIndex)),
        new("postgres", ["query"], "the PostgreSQL wire endpoint (psql, Npgsql, Grafana)", _ => new PostgresWiring()),
        new("studio", ["query"], "Studio, the browser UI, with the query API it reads", _ => new StudioWiring()),
        new("sinks", [], "queue ETL tasks to RabbitMQ / Kafka, and queue sinks into the store", p => new EtlSinksModuleWiring(ingestInProcess: p.Store)),
    ];

    /// <summary>What a user names in <c>--target</c>, and the modules each names.</summary>
    public static readonly (string Target, string[] Modules)[] Targets =
    [
        ("ingest", ["documents", "change-feed"]),
        ("indexer", ["indexer", "shard-search"]),
        ("query", ["query", "postgres", "studio"]),
        ("sinks", ["sinks"]),
    ];

    /// <summary>The target names of <paramref name="target"/>; throws <see cref="ArgumentException"/> saying what is wrong.</summary>
    public static IReadOnlyList<string> Parse(string target)
    {
        var known = Targets.Select(t => t.Target).ToList();
        if (target.Trim() == "all") return known;
        var names = target.Split(',', StringSplitOptions.TrimEntries);
        foreach (var name in names)
            if (!known.Contains(name))
                throw new ArgumentException($"unknown target '{name}' in '{target}' (expected all, or one or more of {string.Join(", ", known)} joined by commas)");
        if (names.Distinct().Count() != names.Length) throw new ArgumentException($"target '{target}' names a module twice");
        return [.. known.Where(names.Contains)];
    }

    /// <summary>The modules <paramref name="target"/> runs, with every module they need, dependencies first.</summary>
    public static IReadOnlyList<Node> Resolve(string target)
    {
        var wanted = new HashSet<string>(Parse(target).SelectMany(t => Targets.Single(x => x.Target == t).Modules));
        for (var grew = true; grew;)
        {
            grew = false;
            foreach (var node in Nodes.Where(n => wanted.Contains(n.Name)).ToList())
                foreach (var need in node.Needs)
                    grew |= wanted.Add(need);
        }
        return [.. Nodes.Where(n => wanted.Contains(n.Name))];
    }

    /// <summary>The wiring of each module <paramref name="target"/> runs, for this process's layout.</summary>
    public static IReadOnlyList<IMagpieModule> ModulesOf(string target)
    {
        var nodes = Resolve(target);
        var store = nodes.Any(n => n.Name == "documents");
        var layout = new ProcessLayout(store, WholeIndex: store && nodes.Any(n => n.Name == "indexer"));
        return [.. nodes.Select(n => n.Wiring(layout))];
    }

    /// <summary>Whether <paramref name="modules"/> call indexer processes over HTTP (and so need a service key once keys are on).</summary>
    public static bool CallsIndexers(IReadOnlyList<IMagpieModule> modules, bool embedded) =>
        !embedded && !modules.Any(m => m is IndexerModuleWiring) && modules.Any(m => m is QueryModuleWiring or ChangeFeedWiring);

    /// <summary>What <c>magpie run --list-targets</c> prints: each target with the modules it runs, then each module with what it needs.</summary>
    public static IEnumerable<string> Describe()
    {
        yield return "targets (--target all, one, or several joined by commas):";
        foreach (var (name, _) in Targets)
            yield return $"  {name,-8} runs {string.Join(", ", Resolve(name).Select(n => n.Name))}";
        yield return $"  {"all",-8} runs {string.Join(", ", Resolve("all").Select(n => n.Name))}";
        yield return "modules (needs → module):";
        foreach (var n in Nodes)
            yield return $"  {n.Name,-18} {(n.Needs.Length == 0 ? "" : "needs " + string.Join(", ", n.Needs) + "; ")}{n.What}";
        yield return "without ingest in the process, indexer, query and sinks read magpie.changes and magpie.indexes from Kafka (--kafka)";
    }
}
