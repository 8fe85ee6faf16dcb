using System.Collections.Concurrent;
using System.Diagnostics;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// Debian's <c>rabbitmq-server</c> (apt-get install rabbitmq-server; <c>RABBITMQ_SERVER</c> overrides the script's
/// path) run by this test run on free ports, with its own epmd, Erlang cookie and data in a temp dir, stopped by pid.
/// </summary>
public sealed class LocalRabbitMq : IServiceRuntime
{
    private readonly string _dir;
    private readonly int _port, _epmdPort, _distPort;
    private readonly ConcurrentQueue<string> _output = new();
    private Process? _server, _epmd;

    private LocalRabbitMq(string dir, int port) => (_dir, _port, _epmdPort, _distPort) = (dir, port, FreePort.Next(), FreePort.Next());

    private static string ServerScript => Environment.GetEnvironmentVariable("RABBITMQ_SERVER") is { Length: > 0 } s ? s : "/usr/lib/rabbitmq/bin/rabbitmq-server";

    /// <summary>Where the Erlang VM writes its pid (the script's own pid is its parent's).</summary>
    private string PidFile => Path.Combine(_dir, "rabbitmq.pid");

    public string Url => $"amqp://guest:guest@127.0.0.1:{_port}/";

    /// <summary>The AMQPS port, when started with a certificate.</summary>
    public int TlsPort { get; } = FreePort.Next();

    /// <param name="tls">Also an AMQPS listener on <see cref="TlsPort"/> with this certificate (self-signed: it is its own CA).</param>
    public static async Task<LocalRabbitMq> StartAsync(int port, TestCertificate? tls = null)
    {
        var server = ServerScript;
        if (!File.Exists(server))
            throw new InvalidOperationException($"no RabbitMQ for the tests: set RABBITMQ_URL, run a Docker engine, or apt-get install rabbitmq-server (looked for {server})");
        var dir = Directory.CreateTempSubdirectory("magpie-rabbit-").FullName;
        await File.WriteAllTextAsync(Path.Combine(dir, "enabled_plugins"), "[].");
        var broker = new LocalRabbitMq(dir, port);
        await File.WriteAllTextAsync(Path.Combine(dir, "rabbitmq.conf"), "loopback_users = none\n" + (tls is null ? "" : $"""
            listeners.ssl.default = {broker.TlsPort}
            ssl_options.cacertfile = {tls.CertificatePath}
            ssl_options.certfile = {tls.CertificatePath}
            ssl_options.keyfile = {tls.KeyPath}
            ssl_options.verify = verify_none
            ssl_options.fail_if_no_peer_cert = false

            """));
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
        _output.Clear();
        File.Delete(PidFile);   // the VM writes its own; a stale one would name a dead pid
        // A restart is CPU-bound: before it listens, the broker scans every module it has loaded for upgrade steps (2-3 s
        // idle). In the fault suite's Kafka round it shares two cores with Kafka, five Magpie processes and four writers
        // running flat out (load average ~30): that restart took 89 and 100 s here, and over 240 s in CI, where other tests
        // run beside it (logged at debug level, the module scan alone took 40 s). A broker has a machine of its own in
        // production: when the tests may, it runs at nice -10 (the same restart: 24 s), and a start gets five minutes.
        var (file, args) = Environment.IsPrivilegedProcess ? ("nice", new[] { "-n", "-10", ServerScript }) : (ServerScript, Array.Empty<string>());
        _server = Start(file, args, new()
        {
            ["HOME"] = _dir,
            ["RABBITMQ_NODENAME"] = $"magpie{_port}@localhost",
            ["RABBITMQ_NODE_PORT"] = _port.ToString(),
            ["RABBITMQ_DIST_PORT"] = _distPort.ToString(),
            ["ERL_EPMD_PORT"] = _epmdPort.ToString(),
            // Schedulers that sleep rather than spin when idle: the broker shares two cores with Kafka and Magpie
            // (RabbitMQ's runtime guide recommends this for shared hosts).
            ["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"] = "-start_epmd false +sbwt none +sbwtdcpu none +sbwtdio none",
            ["RABBITMQ_MNESIA_BASE"] = Path.Combine(_dir, "mnesia"),
            ["RABBITMQ_LOG_BASE"] = Path.Combine(_dir, "log"),
            ["RABBITMQ_LOGS"] = "-",
            ["RABBITMQ_CONFIG_FILE"] = Path.Combine(_dir, "rabbitmq"),
            ["RABBITMQ_ENABLED_PLUGINS_FILE"] = Path.Combine(_dir, "enabled_plugins"),
            ["RABBITMQ_PID_FILE"] = PidFile,
        });
        var started = _server;
        await RabbitMqBroker.WaitReadyAsync(Url, () => !started.HasExited, () => string.Join('\n', _output.TakeLast(40)), TimeSpan.FromMinutes(5));
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

    public Task StopAsync()
    {
        if (_server is null || _server.HasExited) return Task.CompletedTask;
        Signals.Send(BeamPid() ?? _server.Id, Signals.SigTerm);
        if (!_server.WaitForExit(30_000)) KillServer();
        return Task.CompletedTask;
    }

    /// <summary>The Erlang VM's pid, once it has written <see cref="PidFile"/>.</summary>
    private int? BeamPid()
    {
        try { return int.TryParse(File.ReadAllText(PidFile).Trim(), out var pid) ? pid : null; }
        catch (IOException) { return null; }
    }

    /// <summary>SIGKILL to the Erlang VM (its pid file names it) and to the script that started it.</summary>
    private void KillServer()
    {
        if (_server is null || _server.HasExited) return;
        if (BeamPid() is { } beam) Signals.Send(beam, Signals.SigKill);
        _server.Kill(entireProcessTree: true);
        _server.WaitForExit();
    }

    /// <summary>CPU time the broker's Erlang VM has used (benchmarks split costs with it).</summary>
    public TimeSpan? ServerCpu()
    {
        if (BeamPid() is not { } beam) return null;
        try { using var p = Process.GetProcessById(beam); return p.TotalProcessorTime; }
        catch (ArgumentException) { return null; }
    }

    public Task StartAgainAsync() => StartProcessesAsync();

    public async ValueTask DisposeAsync()
    {
        await StopAsync();
        if (_epmd is { HasExited: false }) { _epmd.Kill(); _epmd.WaitForExit(); }
        try { Directory.Delete(_dir, recursive: true); } catch (IOException) { }
    }
}
