using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Deploy;

/// <summary>
/// compose.yaml run by Debian's docker-compose against a container engine's Docker API, as its own project. The file run is
/// compose.yaml with the four edits this engine needs and nothing else (each must apply exactly once, so a change to
/// compose.yaml that moves them fails here first): no top-level <c>name:</c> (docker-compose 1.29 does not know it; the
/// project is named with -p), no grafana service (no image here), and the indexer's and ingest's host port ranges published
/// as one container port (podman 4.3's Docker API refuses host port ranges; each replica's port is read with <see cref="PortAsync"/>).
/// podman runs health checks from systemd timers, and there is no systemd here: while the stack lives, a loop runs the
/// check of every container still starting, as the timers would.
/// </summary>
public sealed partial class ComposeStack : IAsyncDisposable
{
    private readonly ContainerEngine _engine;
    private readonly string _file;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _healthChecks;

    private ComposeStack(ContainerEngine engine, string project, string file)
    {
        (_engine, Project, _file) = (engine, project, file);
        _healthChecks = RunHealthChecksAsync(_stop.Token);
    }

    public string Project { get; }

    /// <summary>The docker-compose command line a shell runs for <c>docker compose</c> (the docs' commands go through it).</summary>
    public string CommandLine => $"{string.Concat(Environment().Select(v => $"{v.Key}={v.Value} "))}docker-compose -p {Project} -f {_file} --project-directory {RepoPaths.Root}";

    public static ComposeStack Create(ContainerEngine engine, string project)
    {
        var text = File.ReadAllText(Path.Combine(RepoPaths.Root, "compose.yaml"));
        text = Once(text, NameLine(), "");
        text = Once(text, GrafanaService(), "\n");
        text = Once(text, IndexerPortRange(), "    ports: [\"8080\"]\n");
        text = Once(text, IngestPortRange(), "    ports: [\"8080\"]\n");
        var file = Path.Combine(Directory.CreateTempSubdirectory("magpie-compose-").FullName, "compose.yaml");
        File.WriteAllText(file, text);
        return new ComposeStack(engine, project, file);
    }

    private static string Once(string text, Regex pattern, string replacement)
    {
        Assert.True(pattern.Matches(text).Count == 1, $"compose.yaml: expected one match of {pattern}");
        return pattern.Replace(text, replacement);
    }

    [GeneratedRegex(@"^name: magpie\n", RegexOptions.Multiline)]
    private static partial Regex NameLine();

    // The service's comment lines, its key and its indented body, up to the next top-level key.
    [GeneratedRegex(@"\n(  #[^\n]*\n)*  grafana:\n(    [^\n]*\n|\n)*?(?=\S)")]
    private static partial Regex GrafanaService();

    [GeneratedRegex(@"^    ports: \[""8091-8099:8080""\]\n", RegexOptions.Multiline)]
    private static partial Regex IndexerPortRange();

    [GeneratedRegex(@"^    ports: \[""8080-8081:8080""\]\n", RegexOptions.Multiline)]
    private static partial Regex IngestPortRange();

    /// <summary>docker-compose with these arguments; throws with its output unless it exits 0.</summary>
    public async Task<string> RunAsync(TimeSpan timeout, params string[] args)
    {
        var (exit, output) = await ComposeAsync(timeout, args);
        Assert.True(exit == 0, $"docker-compose {string.Join(' ', args)} exited {exit}:\n{output}");
        return output;
    }

    private Task<(int Exit, string Output)> ComposeAsync(TimeSpan timeout, params string[] args) =>
        ContainerEngine.RunAsync("docker-compose", ["-p", Project, "-f", _file, "--project-directory", RepoPaths.Root, .. args], timeout, Environment());

    /// <summary>What docker-compose runs with: the engine, and the variables compose.yaml reads.</summary>
    private Dictionary<string, string> Environment() => new(Variables) { ["DOCKER_HOST"] = _engine.DockerHost };

    /// <summary>compose.yaml's variables (<c>${NAME:-default}</c>) as a user sets them in the shell or a .env file.</summary>
    public Dictionary<string, string> Variables { get; } = [];

    /// <summary>The services of the file run.</summary>
    public async Task<List<string>> ServicesAsync() =>
        [.. (await RunAsync(TimeSpan.FromSeconds(30), "config", "--services")).Split('\n', StringSplitOptions.RemoveEmptyEntries)];

    /// <summary>The host port a service's replica (1-based) publishes for a container port.</summary>
    public async Task<int> PortAsync(string service, int containerPort, int index = 1)
    {
        var output = await RunAsync(TimeSpan.FromSeconds(30), "port", "--index", index.ToString(), service, containerPort.ToString());
        return int.Parse(output.Trim().Split('\n')[^1].Split(':')[^1]);
    }

    /// <summary>
    /// Waits until every container of the project is healthy (or has no health check and runs), and every one-shot
    /// (<paramref name="oneShots"/>) exited 0; fails at once when one exits otherwise or turns unhealthy.
    /// </summary>
    public async Task WaitHealthyAsync(TimeSpan timeout, params string[] oneShots)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (true)
        {
            var states = await StatesAsync();
            var pending = new List<string>();
            foreach (var (name, service, state, health, exitCode) in states)
            {
                if (oneShots.Contains(service))
                {
                    if (state == "exited" && exitCode != 0) Assert.Fail($"{name} exited {exitCode}:\n{await LogsAsync(name)}");
                    if (state != "exited") pending.Add($"{name} {state}");
                }
                else if (state == "exited" || health == "unhealthy") Assert.Fail($"{name} is {state} {health}:\n{await LogsAsync(name)}");
                else if (health is not ("healthy" or "")) pending.Add($"{name} {health}");
            }
            if (pending.Count == 0 && states.Count > 0) return;
            Assert.True(DateTime.UtcNow < deadline, $"not healthy within {timeout}: {string.Join(", ", pending)}");
            await Task.Delay(500);
        }
    }

    private async Task<List<(string Name, string Service, string State, string Health, int ExitCode)>> StatesAsync()
    {
        var (exit, output) = await ContainerEngine.RunAsync("podman", ["ps", "-a", "--filter", $"label=com.docker.compose.project={Project}", "--format", "json"],
            TimeSpan.FromSeconds(30));
        Assert.True(exit == 0, output);
        // State is the machine word (running, exited); the health is only in the status text: "Up 5 seconds (healthy)".
        return JsonDocument.Parse(output).RootElement.EnumerateArray().Select(c =>
        {
            var status = c.GetProperty("Status").GetString() ?? "";
            var health = status.Contains("(healthy)") ? "healthy" : status.Contains("(unhealthy)") ? "unhealthy" : status.Contains("(starting)") ? "starting" : "";
            return (c.GetProperty("Names")[0].GetString()!, c.GetProperty("Labels").GetProperty("com.docker.compose.service").GetString()!,
                c.GetProperty("State").GetString()!, health, c.GetProperty("ExitCode").GetInt32());
        }).ToList();
    }

    public async Task<string> LogsAsync(string container) => (await ContainerEngine.RunAsync("podman", ["logs", "--tail", "60", container], TimeSpan.FromSeconds(30))).Output;

    private async Task RunHealthChecksAsync(CancellationToken stop)
    {
        while (!stop.IsCancellationRequested)
        {
            try
            {
                var (_, starting) = await ContainerEngine.RunAsync("podman", ["ps", "-q", "--filter", $"label=com.docker.compose.project={Project}", "--filter", "health=starting"],
                    TimeSpan.FromSeconds(30));
                await Task.WhenAll(starting.Split('\n', StringSplitOptions.RemoveEmptyEntries)
                    .Select(id => ContainerEngine.RunAsync("podman", ["healthcheck", "run", id], TimeSpan.FromSeconds(30))));
                await Task.Delay(2000, stop);
            }
            catch (OperationCanceledException) { return; }
            catch (TimeoutException) { }
        }
    }

    /// <summary>Takes the project down with its volumes.</summary>
    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        await _healthChecks;
        await ComposeAsync(TimeSpan.FromMinutes(3), "down", "-v", "--remove-orphans");
        Directory.Delete(Path.GetDirectoryName(_file)!, recursive: true);
    }
}
