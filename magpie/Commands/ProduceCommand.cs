using Magpie.Producers.Publishing;
using System.CommandLine;
using Magpie.Hosting;
using System.Diagnostics;
using Magpie.Producers;
using Magpie.Producers.Sinks;
using Magpie.Producers.Sources;
using Magpie.Producers.StackExchange;
using Spectre.Console;

namespace Magpie.Commands;

/// <summary>`magpie produce …`: publish documents to a running Magpie over HTTP (--url) or to Kafka (--kafka).</summary>
public static class ProduceCommand
{
    private static readonly Option<string?> Url = new("--url") { Description = "Magpie base URL, e.g. http://localhost:8080 (POST /bulk_docs)" };
    private static readonly Option<string?> Kafka = new("--kafka") { Description = "Kafka bootstrap servers (publishes to magpie.documents)" };
    private static readonly Option<int> BatchSize = new("--batch-size") { Description = "Writes per batch", DefaultValueFactory = _ => 128 };
    private static readonly Option<int> MaxInFlight = new("--max-in-flight") { Description = "Batches outstanding at once", DefaultValueFactory = _ => 4 };
    private static readonly Option<string?> KeyFile = new("--key-file") { Description = "File holding an API key with the write role (or set MAGPIE_API_KEY); never the key itself on the command line" };

    public static Command Create()
    {
        var produce = new Command("produce", "Publish documents: a Stack Exchange dump, NDJSON, or synthetic posts");
        produce.Subcommands.Add(StackExchange());
        produce.Subcommands.Add(Ndjson());
        produce.Subcommands.Add(Synthetic());
        return produce;
    }

    private static Command WithSinkOptions(Command c)
    {
        c.Options.Add(Url); c.Options.Add(Kafka); c.Options.Add(BatchSize); c.Options.Add(MaxInFlight); c.Options.Add(KeyFile);
        c.Validators.Add(r =>
        {
            if ((r.GetValue(Url) is null) == (r.GetValue(Kafka) is null)) r.AddError("give exactly one of --url or --kafka");
        });
        return c;
    }

    private static Command StackExchange()
    {
        var dir = new Option<string>("--dir") { Description = "Folder with Users.xml and/or Posts.xml, and any of Badges.xml, Comments.xml, Votes.xml", Required = true };
        var c = WithSinkOptions(new Command("stackexchange", "Import a Stack Exchange dump: users and posts, badges and comments merged in") { dir });
        c.SetAction(async (parse, ct) =>
        {
            var dump = new StackExchangeDump(parse.GetValue(dir)!);
            if (dump.Problem() is { } problem)
            {
                Console.Error.WriteLine($"magpie produce stackexchange: {problem}");
                return 2;
            }
            await using var sink = await OpenSink(parse, ct);
            var phases = dump.Phases();
            var watch = Stopwatch.StartNew();
            var counts = new Dictionary<string, long>();
            await Bars().StartAsync(async progress =>
            {
                var bars = phases.Select(p => (p, bar: progress.AddTask(p.Name, maxValue: p.Count()))).ToList();
                foreach (var (phase, bar) in bars)
                {
                    // Phases run one after another: appends need their users and posts to exist.
                    counts[phase.Name] = await Publisher.PublishAsync(phase.Writes(), sink, parse.GetValue(BatchSize), parse.GetValue(MaxInFlight),
                        new Progress<int>(n => bar.Increment(n)), ct);
                    bar.Value = bar.MaxValue;
                }
            });
            Console.WriteLine($"imported {string.Join(", ", counts.Select(kv => $"{kv.Key} {kv.Value}"))}; skipped {dump.Orphans} rows whose user/post is not in the dump; {watch.Elapsed.TotalSeconds:F1} s");
            return 0;
        });
        return c;
    }

    private static Command Ndjson()
    {
        var file = new Argument<string>("file") { Description = "NDJSON file, one JSON object per line" };
        var idField = new Option<string>("--id-field") { Description = "Member holding the id when @metadata.@id is absent", DefaultValueFactory = _ => "id" };
        var c = WithSinkOptions(new Command("ndjson", "Publish an NDJSON file as PUTs") { file, idField });
        c.SetAction(async (parse, ct) =>
        {
            var path = parse.GetValue(file)!;
            await using var sink = await OpenSink(parse, ct);
            var total = File.ReadLines(path).LongCount(l => !string.IsNullOrWhiteSpace(l));
            var sent = await WithBar(Path.GetFileName(path), total, p =>
                Publisher.PublishAsync(NdjsonSource.Read(path, parse.GetValue(idField)!), sink, parse.GetValue(BatchSize), parse.GetValue(MaxInFlight), p, ct));
            Console.WriteLine($"published {sent} documents");
            return 0;
        });
        return c;
    }

    private static Command Synthetic()
    {
        var count = new Option<long>("--count") { Description = "Number of posts", Required = true };
        var seed = new Option<int>("--seed") { Description = "Random seed (same seed, same posts)", DefaultValueFactory = _ => 42 };
        var c = WithSinkOptions(new Command("synthetic", "Publish deterministic ~1 KB Stack Overflow-like posts") { count, seed });
        c.SetAction(async (parse, ct) =>
        {
            await using var sink = await OpenSink(parse, ct);
            var n = parse.GetValue(count);
            var watch = Stopwatch.StartNew();
            var sent = await WithBar("posts", n, p =>
                Publisher.PublishAsync(SyntheticPosts.Generate(n, parse.GetValue(seed)), sink, parse.GetValue(BatchSize), parse.GetValue(MaxInFlight), p, ct));
            Console.WriteLine($"published {sent} posts in {watch.Elapsed.TotalSeconds:F1} s ({sent / Math.Max(watch.Elapsed.TotalSeconds, 0.001):F0}/s)");
            return 0;
        });
        return c;
    }

    private static async Task<IDocumentSink> OpenSink(ParseResult parse, CancellationToken ct)
    {
        if (parse.GetValue(Url) is { } url)
        {
            var key = parse.GetValue(KeyFile) is { } file ? (await File.ReadAllTextAsync(file, ct)).Trim() : Environment.GetEnvironmentVariable("MAGPIE_API_KEY");
            return new HttpBulkSink(new Uri(url.TrimEnd('/') + "/"), apiKey: string.IsNullOrWhiteSpace(key) ? null : key);
        }
        var servers = parse.GetValue(Kafka)!;
        // The same cluster settings `magpie run` reads (SASL/TLS under Magpie:KafkaClient).
        Magpie.Kafka.KafkaClients.UseCluster(servers, MagpieHost.ReadSettings(MagpieHost.CreateBuilder()).KafkaClient);
        await KafkaDocumentSink.EnsureTopicsAsync(servers, ct);
        return new KafkaDocumentSink(servers);
    }

    private static async Task<long> WithBar(string name, long total, Func<IProgress<int>, Task<long>> run)
    {
        long result = 0;
        await Bars().StartAsync(async progress =>
        {
            var bar = progress.AddTask(name, maxValue: Math.Max(total, 1));
            result = await run(new Progress<int>(n => bar.Increment(n)));
            bar.Value = bar.MaxValue;
        });
        return result;
    }

    /// <summary>Live bars on a terminal; when output is redirected (CI, pipes) only the final state, not a line per refresh.</summary>
    private static Progress Bars() => AnsiConsole.Progress().AutoRefresh(AnsiConsole.Profile.Capabilities.Interactive).Columns(Columns());

    private static ProgressColumn[] Columns() =>
        [new TaskDescriptionColumn(), new ProgressBarColumn(), new PercentageColumn(), new RemainingTimeColumn(), new SpinnerColumn()];
}
