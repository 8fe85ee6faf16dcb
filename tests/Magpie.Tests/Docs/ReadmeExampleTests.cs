using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Docs;

/// <summary>
/// The README's tour and the examples of the docs pages run as written (see <see cref="DocsShell"/> for what is swapped):
/// the pages that assume a running `magpie run` share one; the pages that start their own servers start them.
/// The compose page's stack runs in <see cref="Deploy.ComposeUpTests"/>.
/// </summary>
public sealed class ReadmeExampleTests(RabbitMqFixture rabbit) : IClassFixture<RabbitMqFixture>
{
    private static string Page(string path) => File.ReadAllText(Path.Combine(RepoPaths.Root, path));

    [Fact]
    public async Task The_readme_and_the_pages_run_against_one_magpie()
    {
        var tour = ReadmeExamples.Blocks(Page("README.md"), "A five-minute tour");
        var pages = new[] { "docs/ETL.md", "docs/SINKS.md", "docs/INDEXES.md", "docs/QUERIES.md", "docs/POSTGRESQL.md", "docs/HTTP-API.md", "docs/OPERATIONS.md", "docs/STUDIO.md" }
            .SelectMany(p => ReadmeExamples.Blocks(Page(p), null)).ToList();
        Assert.True(tour.Sum(b => b.Count) >= 12 && pages.Sum(b => b.Count) >= 15, "the example blocks moved: update this test's pages and headings");

        await using var shell = await DocsShell.CreateAsync(rabbitUrl: rabbit.Broker.Url);
        await shell.StartDefaultServerAsync();
        await shell.RunAsync(tour.Concat(pages));
    }

    [Fact]
    public async Task The_security_page_runs_with_its_own_keys_and_server()
    {
        var blocks = ReadmeExamples.Blocks(Page("docs/SECURITY.md"), null);
        Assert.Contains(blocks.SelectMany(b => b), c => c.Contains("-- run --bind 0.0.0.0"));
        await using var shell = await DocsShell.CreateAsync();
        await shell.RunAsync(blocks);
    }
}

/// <summary>The Kafka-mode examples: an embedded server with Kafka, then the split targets, on a broker of their own (the
/// split ingest reads magpie.documents from the start, so a shared broker would feed it other tests' documents).</summary>
public sealed class KafkaPageExampleTests
{
    [Fact]
    public Task The_kafka_mode_examples_run_as_written() => RunSectionAsync("Kafka mode", "--target indexer");

    [Fact]
    public Task The_scaling_out_examples_run_as_written() => RunSectionAsync("Scaling ingest out", "--partitioned");

    /// <summary>Runs a section's commands (one of which contains <paramref name="mustContain"/>) against a broker of their own.</summary>
    private static async Task RunSectionAsync(string heading, string mustContain)
    {
        var blocks = ReadmeExamples.Blocks(File.ReadAllText(Path.Combine(RepoPaths.Root, "docs/KAFKA-AND-COMPOSE.md")), heading);
        Assert.Contains(blocks.SelectMany(b => b), c => c.Contains(mustContain));
        await using var kafka = await KafkaBroker.StartOwnedAsync();
        await using var shell = await DocsShell.CreateAsync(kafka: kafka.BootstrapServers);
        await shell.RunAsync(blocks);
    }
}
