using System.Diagnostics;
using System.Text.Json.Nodes;
using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Docs;

/// <summary>
/// Runs a page's shell examples as a user runs them, with bash, curl and psql, in a working directory of its own. Only
/// addresses and the executable are swapped: `dotnet run --project magpie --` → the built magpie.dll, a documented HTTP
/// port (`localhost:8080`, or the `--http-port` a `run` line gives) → the port of the process started for it, `-p 5433` /
/// `port=5433` → that process's PostgreSQL port, `localhost:9092` → <see cref="Kafka"/>, the RabbitMQ URL →
/// <see cref="RabbitUrl"/>, `../shared/` → the shared directory. A `magpie run` line starts that server (stopped when its
/// block ends) on the `--data-dir` it names, else the first one on the shell's data directory (which `magpie keys` commands
/// use too); an `export` carries its value to the commands after it. Every command must exit 0; every curl answers 2xx, or
/// the status its "→ 401" comment promises, and the JSON body such a comment gives.
/// </summary>
public sealed partial class DocsShell : IAsyncDisposable
{
    private readonly Dictionary<int, MagpieProcess> _servers = [];
    private readonly string _workDir = Directory.CreateTempSubdirectory("magpie-docs-").FullName;
    private readonly string _dataDir = Directory.CreateTempSubdirectory("magpie-docs-data-").FullName;
    private readonly Dictionary<string, string> _exports = [];
    private bool _dataDirTaken;
    private readonly string _partitionedGroup = $"magpie-docs-{Guid.NewGuid():N}";

    public string? Kafka { get; init; }
    public string? RabbitUrl { get; init; }

    /// <summary>Further swaps (documented text → this run's), applied after the shell's own.</summary>
    public Dictionary<string, string> Swaps { get; init; } = [];

    /// <summary>A server the page assumes is running (`magpie run` on :8080, as the README's first command starts it).</summary>
    public async Task StartDefaultServerAsync() => await StartServerAsync("run");

    /// <summary>Runs the blocks in order; the servers a block starts are stopped at its end.</summary>
    public async Task RunAsync(IEnumerable<List<string>> blocks)
    {
        foreach (var block in blocks)
        {
            var before = _servers.Keys.ToHashSet();
            foreach (var command in block) await RunAsync(command);
            foreach (var port in _servers.Keys.Except(before).ToList())
            {
                await _servers[port].DisposeAsync();
                _servers.Remove(port);
            }
        }
    }

    public async Task RunAsync(string command)
    {
        if (RunLine().Match(command) is { Success: true } run && !command.Contains("--list-targets"))
        {
            await StartServerAsync(run.Groups[1].Value);
            return;
        }
        if (ExportLine().Match(command) is { Success: true } export)
        {
            // Each command runs in a bash of its own: what a page exports is carried to the commands after it.
            var (exported, value) = await BashAsync($"{Swap(command)}\nprintf %s \"${export.Groups[1].Value}\"");
            Assert.True(exported == 0 && value.Length > 0, $"{command}\nexited {exported}: {value}");
            _exports[export.Groups[1].Value] = value;
            return;
        }
        var (exit, output) = await BashAsync(Swap(command));
        Assert.True(exit == 0, $"{command}\nexited {exit}: {output}");
        if (!command.StartsWith("curl", StringComparison.Ordinal)) return;
        var lines = output.TrimEnd().Split('\n');
        var status = int.Parse(lines[^1]);
        if (ReadmeExamples.Promise(command) is { } promise)
        {
            Assert.True(promise.Status == status, $"{command}\nanswered {status}: {output}");
            if (promise.Body is { } body)
                Assert.True(JsonNode.DeepEquals(JsonNode.Parse(body), JsonNode.Parse(string.Join('\n', lines[..^1]))), $"{command}\ngave {output}");
        }
        else Assert.True(status is >= 200 and < 300, $"{command}\nanswered {status}: {output}");
    }

    private async Task StartServerAsync(string commandLine)
    {
        var args = commandLine.Split('#')[0].Split(' ', StringSplitOptions.RemoveEmptyEntries).Skip(1).ToList();   // after "run"
        string? Take(string option)
        {
            var i = args.IndexOf(option);
            if (i < 0) return null;
            var value = args[i + 1];
            args.RemoveRange(i, 2);
            return value;
        }
        var documentedPort = int.Parse(Take("--http-port") ?? "8080");
        var target = Take("--target") ?? "all";
        var kafka = Take("--kafka") is { } k ? Swap(k) : null;
        Assert.False(_servers.ContainsKey(documentedPort), $"two servers on :{documentedPort}");
        string? dataDir;
        if (Take("--data-dir") is { } documentedDir) dataDir = Directory.CreateDirectory(Path.Combine(_workDir, documentedDir)).FullName;
        else
        {
            dataDir = _dataDirTaken ? null : _dataDir;
            _dataDirTaken = true;
        }
        // The ingest processes of a partitioned store share their consumer group (each server otherwise gets a group of its own).
        var environment = args.Contains("--partitioned") ? new Dictionary<string, string> { ["MAGPIE__CONSUMERGROUP"] = _partitionedGroup } : null;
        _servers[documentedPort] = await MagpieProcess.StartAsync(kafka, target, dataDir, environment, arguments: args);
    }

    private string Swap(string text)
    {
        foreach (var (port, server) in _servers)
            text = text.Replace($"localhost:{port}", $"127.0.0.1:{server.Port}");
        if (_servers.TryGetValue(8080, out var main) || _servers.Count == 1 && (main = _servers.Values.Single()) is not null)
            text = text.Replace("-p 5433", $"-p {main.PgPort}").Replace("port=5433", $"port={main.PgPort}");
        if (Kafka is not null) text = text.Replace("localhost:9092", Kafka);
        if (RabbitUrl is not null) text = text.Replace("amqp://guest:guest@localhost:5672/", RabbitUrl);
        text = text.Replace("dotnet run --project magpie --", $"dotnet {RepoPaths.MagpieDll}").Replace("../shared/", RepoPaths.Shared + "/");
        foreach (var (documented, actual) in Swaps) text = text.Replace(documented, actual);
        return text;
    }

    private async Task<(int Exit, string Output)> BashAsync(string command)
    {
        var psi = new ProcessStartInfo("bash", ["-c", command]) { RedirectStandardOutput = true, RedirectStandardError = true, WorkingDirectory = _workDir };
        // Every curl also prints its status on a last line (and fails loudly on a connection error).
        psi.Environment["CURL_HOME"] = _workDir;
        psi.Environment["MAGPIE__DATADIR"] = _dataDir;
        foreach (var (name, value) in _exports) psi.Environment[name] = value;
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        await p.WaitForExitAsync().WaitAsync(TimeSpan.FromMinutes(5));
        return (p.ExitCode, await stdout + await stderr);
    }

    public static async Task<DocsShell> CreateAsync(string? kafka = null, string? rabbitUrl = null, Dictionary<string, string>? swaps = null)
    {
        var shell = new DocsShell { Kafka = kafka, RabbitUrl = rabbitUrl, Swaps = swaps ?? [] };
        await File.WriteAllTextAsync(Path.Combine(shell._workDir, ".curlrc"), "-sS\n-w \"\\n%{http_code}\"\n");
        return shell;
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var server in _servers.Values) await server.DisposeAsync();
        try { Directory.Delete(_workDir, recursive: true); } catch (IOException) { }
        try { Directory.Delete(_dataDir, recursive: true); } catch (IOException) { }
    }

    [GeneratedRegex(@"^export (\w+)=")]
    private static partial Regex ExportLine();

    [GeneratedRegex(@"^dotnet run --project magpie -- (run\b[^\n]*)$")]
    private static partial Regex RunLine();
}
