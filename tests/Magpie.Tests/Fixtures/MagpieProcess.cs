using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net.Http.Json;
using System.Text.Json;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// The real `magpie` executable as a child process on a free port, talking real HTTP. Killable with
/// SIGKILL (a crash) and restartable on the same data directory.
/// </summary>
public sealed class MagpieProcess : IAsyncDisposable
{
    private readonly ConcurrentQueue<string> _output = new();
    private readonly Dictionary<string, string> _environment;
    private Process? _process;

    // Test instances share one broker: each instance (and its restarts) has its own input-topic consumer group.
    private readonly string _consumerGroup = $"magpie-test-{Guid.NewGuid():N}";

    public string ConsumerGroup => _consumerGroup;

    public string DataDir { get; }
    public int Port { get; }

    /// <summary>The PostgreSQL wire port of this process's query target (a free port of its own, so processes never collide).</summary>
    public int PgPort { get; }
    public string? Kafka { get; }
    public string Target { get; }
    public HttpClient Http { get; }
    public Uri BaseUrl => new($"{(Tls ? "https" : "http")}://127.0.0.1:{Port}/");

    /// <summary>Started with a TLS certificate (MAGPIE__TLS__CERTIFICATE): HTTPS, and <see cref="Http"/> accepts the test certificate.</summary>
    public bool Tls => _environment.ContainsKey("MAGPIE__TLS__CERTIFICATE");

    /// <summary>An API key <see cref="Http"/> sends with every request (set it when the data directory has keys).</summary>
    public string? ApiKey
    {
        get => Http.DefaultRequestHeaders.Authorization?.Parameter;
        set => Http.DefaultRequestHeaders.Authorization = value is null ? null : new("Bearer", value);
    }

    /// <summary>Options added to `magpie run` after the ones the fixture gives (e.g. `--bind 0.0.0.0`).</summary>
    public IReadOnlyList<string> Arguments { get; init; } = [];

    private MagpieProcess(string dataDir, string? kafka, string target, Dictionary<string, string> environment)
    {
        DataDir = dataDir;
        Kafka = kafka;
        Target = target;
        _environment = environment;
        Port = FreePort.Next();
        PgPort = FreePort.Next();
        Http = new HttpClient(new HttpClientHandler { ServerCertificateCustomValidationCallback = Tls ? HttpClientHandler.DangerousAcceptAnyServerCertificateValidator : null })
        {
            BaseAddress = BaseUrl, Timeout = TimeSpan.FromSeconds(60),
        };
    }

    public static async Task<MagpieProcess> StartAsync(string? kafka = null, string target = "all", string? dataDir = null,
        Dictionary<string, string>? environment = null, IReadOnlyList<string>? arguments = null)
    {
        var magpie = new MagpieProcess(dataDir ?? Directory.CreateTempSubdirectory("magpie-data-").FullName, kafka, target, environment ?? [])
        {
            Arguments = arguments ?? [],
        };
        await magpie.StartAsync();
        return magpie;
    }

    public IReadOnlyCollection<string> Output => _output;

    /// <summary>The running process's id (0 when stopped).</summary>
    public int Pid => _process is { HasExited: false } p ? p.Id : 0;

    public async Task StartAsync()
    {
        var psi = new ProcessStartInfo("dotnet")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var a in new[] { RepoPaths.MagpieDll, "run", "--target", Target, "--data-dir", DataDir, "--http-port", Port.ToString() })
            psi.ArgumentList.Add(a);
        if (Kafka is not null) { psi.ArgumentList.Add("--kafka"); psi.ArgumentList.Add(Kafka); }
        foreach (var a in Arguments) psi.ArgumentList.Add(a);
        psi.Environment["MAGPIE__CHECKPOINTINTERVALSECONDS"] = "5";
        psi.Environment["MAGPIE__CONSUMERGROUP"] = _consumerGroup;
        psi.Environment["MAGPIE__ADVERTISEDURL"] = BaseUrl.ToString();
        psi.Environment["MAGPIE__PG__PORT"] = PgPort.ToString();
        foreach (var (k, v) in _environment) psi.Environment[k] = v;
        _process = Process.Start(psi)!;
        _process.OutputDataReceived += (_, e) => { if (e.Data is not null) _output.Enqueue(e.Data); };
        _process.ErrorDataReceived += (_, e) => { if (e.Data is not null) _output.Enqueue(e.Data); };
        _process.BeginOutputReadLine();
        _process.BeginErrorReadLine();
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (true)
        {
            if (_process.HasExited)
            {
                // HasExited can be true before the output readers have delivered the last lines (the one-line reason a start
                // failed is written last); WaitForExit() without a timeout waits for them.
                _process.WaitForExit();
                throw new InvalidOperationException($"magpie exited with {_process.ExitCode}:\n{string.Join('\n', _output)}");
            }
            try
            {
                using var health = await Http.GetAsync("health");
                if (health.IsSuccessStatusCode) return;
            }
            catch (HttpRequestException) { }
            if (DateTime.UtcNow > deadline) throw new TimeoutException($"magpie did not answer /health:\n{string.Join('\n', _output)}");
            await Task.Delay(100);
        }
    }

    /// <summary>kill -9: no shutdown hooks, no final checkpoint, no flush.</summary>
    public void Crash()
    {
        if (_process is null || _process.HasExited) return;
        Signals.Send(_process.Id, Signals.SigKill);
        _process.WaitForExit();
    }

    public async Task StopAsync()
    {
        if (_process is null) return;
        if (_process.HasExited)
        {
            _process.WaitForExit();   // its last lines delivered to Output
            return;
        }
        Signals.Send(_process.Id, Signals.SigTerm);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        try { await _process.WaitForExitAsync(cts.Token); }
        catch (OperationCanceledException) { Crash(); }
    }

    public async Task<JsonElement> StatsAsync() => await Http.GetFromJsonAsync<JsonElement>("stats");

    public async ValueTask DisposeAsync()
    {
        Crash();
        _process?.Dispose();
        Http.Dispose();
        try { Directory.Delete(DataDir, recursive: true); } catch (IOException) { }
    }
}
