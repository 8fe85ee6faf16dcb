using System.Diagnostics;
using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Docs;

/// <summary>
/// The README's tour and the examples of the docs pages run as written, in order, with bash, curl and psql against a running
/// Magpie: only the addresses (localhost:8080/8082 and the PostgreSQL port 5433 → this test's ports), the RabbitMQ URL and
/// `dotnet run --project magpie --` (→ the built executable) are swapped. Every command must succeed, every curl answer 2xx,
/// and a comment "→ 201 {…}" must be what comes back.
/// </summary>
public sealed class ReadmeExampleTests(RabbitMqFixture rabbit) : IClassFixture<RabbitMqFixture>
{
    [Fact]
    public async Task The_readme_examples_run_as_written()
    {
        string Page(string path) => File.ReadAllText(Path.Combine(RepoPaths.Root, path));
        var tour = ReadmeExamples.Commands(Page("README.md"), "A five-minute tour");
        var etl = ReadmeExamples.Commands(Page("docs/ETL.md"), null);
        var indexes = ReadmeExamples.Commands(Page("docs/INDEXES.md"), null).Concat(ReadmeExamples.Commands(Page("docs/QUERIES.md"), null)).ToList();
        var postgres = ReadmeExamples.Commands(Page("docs/POSTGRESQL.md"), null);
        var pages = new[] { "docs/HTTP-API.md", "docs/OPERATIONS.md" }.SelectMany(p => ReadmeExamples.Commands(Page(p), null)).ToList();
        Assert.True(tour.Count >= 12 && etl.Count >= 3 && indexes.Count >= 3 && postgres.Count >= 5, "the example blocks moved: update this test's pages and headings");

        await using var magpie = await MagpieProcess.StartAsync();
        var curlHome = Directory.CreateTempSubdirectory("magpie-curlrc-").FullName;
        // Every curl also prints its status on a last line (and fails loudly on a connection error).
        await File.WriteAllTextAsync(Path.Combine(curlHome, ".curlrc"), "-sS\n-w \"\\n%{http_code}\"\n");
        foreach (var command in tour.Concat(etl).Concat(indexes).Concat(postgres).Concat(pages))
        {
            var runnable = command
                .Replace("localhost:8080", $"127.0.0.1:{magpie.Port}").Replace("localhost:8082", $"127.0.0.1:{magpie.Port}")
                .Replace("-p 5433", $"-p {magpie.PgPort}")
                .Replace("amqp://guest:guest@localhost:5672/", rabbit.Broker.Url)
                .Replace("dotnet run --project magpie --", $"dotnet {RepoPaths.MagpieDll}");
            var (exit, output) = await BashAsync(runnable, curlHome);
            Assert.True(exit == 0, $"{command}\nexited {exit}: {output}");
            if (!command.StartsWith("curl", StringComparison.Ordinal)) continue;
            var lines = output.TrimEnd().Split('\n');
            var status = int.Parse(lines[^1]);
            Assert.True(status is >= 200 and < 300, $"{command}\nanswered {status}: {output}");
            if (ReadmeExamples.Promise(command) is { } promise)
            {
                Assert.Equal(promise.Status, status);
                if (promise.Body is { } body)
                    Assert.True(JsonNode.DeepEquals(JsonNode.Parse(body), JsonNode.Parse(string.Join('\n', lines[..^1]))), $"{command}\ngave {output}");
            }
        }
    }

    private static async Task<(int Exit, string Output)> BashAsync(string command, string curlHome)
    {
        var psi = new ProcessStartInfo("bash", ["-c", command]) { RedirectStandardOutput = true, RedirectStandardError = true, WorkingDirectory = RepoPaths.Root };
        psi.Environment["CURL_HOME"] = curlHome;
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        await p.WaitForExitAsync().WaitAsync(TimeSpan.FromMinutes(5));
        return (p.ExitCode, await stdout + await stderr);
    }
}
