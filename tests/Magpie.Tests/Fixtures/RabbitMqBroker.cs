using System.Collections.Concurrent;
using System.Diagnostics;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A real RabbitMQ broker for tests, picked in this order: <c>RABBITMQ_URL</c> from the environment; a
/// container when a Docker engine answers; else Debian's <c>rabbitmq-server</c> (apt-get install
/// rabbitmq-server; <c>RABBITMQ_SERVER</c> overrides the script's path) on free ports, with its own epmd,
/// Erlang cookie and data in a temp dir, stopped by pid on dispose.
/// </summary>
public sealed class RabbitMqBroker : IAsyncDisposable
{
    private readonly string? _dir, _container;
    private readonly int _port, _epmdPort, _distPort;
    private readonly ConcurrentQueue<string> _output = new();
    private Process? _server, _epmd;

    public string Url { get; }
    public int Port => _port;

    private RabbitMqBroker(string url, int port = 0, string? dir = null, string? container = null, int epmdPort = 0, int distPort = 0)
    {
        Url = url;
        _port = port;
        _dir = dir;
        _container = container;
        _epmdPort = epmdPort;
        _distPort = distPort;
    }

    public static async Task<RabbitMqBroker> StartAsync()
    {
        if (Environment.GetEnvironmentVariable("RABBITMQ_URL") is { Length: > 0 } url) return new RabbitMqBroker(url);
        return await StartOwnedAsync();
    }

    /// <summary>A broker this test run controls (needed to stop and restart it).</summary>
    public static async Task<RabbitMqBroker> StartOwnedAsync()
    {
        if (await DockerCli.EngineAnswersAsync())
        {
            var port = FreePort.Next();
            var name = $"magpie-test-rabbit-{Guid.NewGuid():N}"[..30];
            await DockerCli.RunAsync($"run -d --name {name} -p 127.0.0.1:{port}:5672 rabbitmq:3.13");
            var container = new RabbitMqBroker($"amqp://guest:guest@127.0.0.1:{port}/", port, container: name);
            await container.WaitReadyAsync(() => true);
            return container;
        }
        var server = Environment.GetEnvironmentVariable("RABBITMQ_SERVER") is { Length: > 0 } s ? s : "/usr/lib/rabbitmq/bin/rabbitmq-server";
        if (!File.Exists(server))
            throw new InvalidOperationException($"no RabbitMQ for the tests: set RABBITMQ_URL, run a Docker engine, or apt-get install rabbitmq-server (looked for {server})");
        var dir = Directory.CreateTempSubdirectory("magpie-rabbit-").FullName;
        await File.WriteAllTextAsync(Path.Combine(dir, "enabled_plugins"), "[].");
        await File.WriteAllTextAsync(Path.Combine(dir, "rabbitmq.conf"), "loopback_users = none\n");
        var p = FreePort.Next();
        var broker = new RabbitMqBroker($"amqp://guest:guest@127.0.0.1:{p}/", p, dir, epmdPort: FreePort.Next(), distPort: FreePort.Next());
        await broker.StartProcessesAsync();
        return broker;
    }

    private async Task StartProcessesAsync()
    {
        if (_epmd is null || _epmd.HasExited)
        {
            // Our own epmd in the foreground, so it is ours to stop (rabbitmq-server would leave a daemon behind).
            _epmd = Start("epmd", ["-port", _epmdPort.ToString()], []);
            await FreePort.WaitOpenAsync(_epmdPort, TimeSpan.FromSeconds(10), () => !_epmd.HasExited);
        }
        var server = Environment.GetEnvironmentVariable("RABBITMQ_SERVER") is { Length: > 0 } s ? s : "/usr/lib/rabbitmq/bin/rabbitmq-server";
        _server = Start(server, [], new()
        {
            ["HOME"] = _dir!,
            ["RABBITMQ_NODENAME"] = $"magpie{_port}@localhost",
            ["RABBITMQ_NODE_PORT"] = _port.ToString(),
            ["RABBITMQ_DIST_PORT"] = _distPort.ToString(),
            ["ERL_EPMD_PORT"] = _epmdPort.ToString(),
            ["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"] = "-start_epmd false",
            ["RABBITMQ_MNESIA_BASE"] = Path.Combine(_dir!, "mnesia"),
            ["RABBITMQ_LOG_BASE"] = Path.Combine(_dir!, "log"),
            ["RABBITMQ_LOGS"] = "-",
            ["RABBITMQ_CONFIG_FILE"] = Path.Combine(_dir!, "rabbitmq"),
            ["RABBITMQ_ENABLED_PLUGINS_FILE"] = Path.Combine(_dir!, "enabled_plugins"),
            ["RABBITMQ_PID_FILE"] = Path.Combine(_dir!, "rabbitmq.pid"),
        });
        await WaitReadyAsync(() => !_server.HasExited);
    }

    /// <summary>The port opens before the broker accepts logins: wait for a real AMQP connection.</summary>
    private async Task WaitReadyAsync(Func<bool> alive)
    {
        var deadline = DateTime.UtcNow.AddSeconds(90);
        while (true)
        {
            if (!alive()) throw new InvalidOperationException($"rabbitmq-server exited:\n{string.Join('\n', _output)}");
            try
            {
                await using var c = await new RabbitMQ.Client.ConnectionFactory { Uri = new Uri(Url) }.CreateConnectionAsync();
                return;
            }
            catch (Exception) when (DateTime.UtcNow < deadline) { await Task.Delay(250); }
        }
    }

    private Process Start(string file, string[] args, Dictionary<string, string> env)
    {
        var psi = new ProcessStartInfo(file) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var a in args) psi.ArgumentList.Add(a);
        foreach (var (k, v) in env) psi.Environment[k] = v;
        var p = Process.Start(psi)!;
        p.OutputDataReceived += (_, e) => { if (e.Data is not null) _output.Enqueue(e.Data); };
        p.ErrorDataReceived += (_, e) => { if (e.Data is not null) _output.Enqueue(e.Data); };
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        return p;
    }

    /// <summary>Stops the broker as an operator would (SIGTERM to the Erlang VM / docker stop) and waits until it is gone.</summary>
    public async Task StopAsync()
    {
        if (_container is not null) { await DockerCli.RunAsync($"stop {_container}"); return; }
        if (_server is null || _server.HasExited) return;
        var pidFile = Path.Combine(_dir!, "rabbitmq.pid");
        if (File.Exists(pidFile) && int.TryParse(File.ReadAllText(pidFile).Trim(), out var beam)) Signals.Send(beam, Signals.SigTerm);
        else Signals.Send(_server.Id, Signals.SigTerm);
        if (!_server.WaitForExit(30_000))
        {
            if (File.Exists(pidFile) && int.TryParse(File.ReadAllText(pidFile).Trim(), out var b)) Signals.Send(b, Signals.SigKill);
            _server.Kill(entireProcessTree: true);
            _server.WaitForExit();
        }
    }

    /// <summary>CPU time the broker's Erlang VM has used, when this run started it as a local process (benchmarks split costs with it).</summary>
    public TimeSpan? ServerCpu()
    {
        var pidFile = _dir is null ? null : Path.Combine(_dir, "rabbitmq.pid");
        if (pidFile is null || !File.Exists(pidFile) || !int.TryParse(File.ReadAllText(pidFile).Trim(), out var beam)) return null;
        try { using var p = Process.GetProcessById(beam); return p.TotalProcessorTime; }
        catch (ArgumentException) { return null; }
    }

    public async Task RestartAsync()
    {
        if (_container is not null) { await DockerCli.RunAsync($"start {_container}"); await WaitReadyAsync(() => true); return; }
        if (_dir is null) throw new InvalidOperationException("this broker belongs to the environment; it can't be restarted");
        await StartProcessesAsync();
    }

    public async ValueTask DisposeAsync()
    {
        if (_container is not null) { await DockerCli.RunAsync($"rm -f {_container}"); return; }
        await StopAsync();
        if (_epmd is { HasExited: false }) { _epmd.Kill(); _epmd.WaitForExit(); }
        if (_dir is not null) try { Directory.Delete(_dir, recursive: true); } catch (IOException) { }
    }
}
