using System.Diagnostics;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Deploy;

/// <summary>
/// A real Prometheus (Debian's <c>prometheus</c> package; <c>PROMETHEUS</c> overrides the binary) on a free loopback port,
/// data in a temp dir, stopped by pid on dispose; and <c>promtool</c> beside it.
/// </summary>
public sealed class PrometheusServer : IAsyncDisposable
{
    private readonly Process _process;
    private readonly string _dir;
    public HttpClient Http { get; }

    private PrometheusServer(Process process, string dir, int port)
    {
        _process = process;
        _dir = dir;
        Http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{port}/"), Timeout = TimeSpan.FromSeconds(30) };
    }

    public static string Binary => Environment.GetEnvironmentVariable("PROMETHEUS") is { Length: > 0 } p ? p : "prometheus";

    public static async Task<PrometheusServer> StartAsync(string configYaml)
    {
        var dir = Directory.CreateTempSubdirectory("magpie-prometheus-").FullName;
        var config = Path.Combine(dir, "prometheus.yml");
        await File.WriteAllTextAsync(config, configYaml);
        var check = await PromtoolAsync(null, "check", "config", config);
        Assert.True(check.Exit == 0, $"promtool check config:\n{check.Output}\n{configYaml}");
        var port = FreePort.Next();
        var psi = new ProcessStartInfo(Binary) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var a in new[] { $"--config.file={config}", $"--storage.tsdb.path={Path.Combine(dir, "data")}", $"--web.listen-address=127.0.0.1:{port}" })
            psi.ArgumentList.Add(a);
        var process = Process.Start(psi)!;
        process.OutputDataReceived += (_, _) => { };
        process.ErrorDataReceived += (_, _) => { };
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        var server = new PrometheusServer(process, dir, port);
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (true)
        {
            if (process.HasExited) throw new InvalidOperationException($"prometheus exited with {process.ExitCode}");
            try { if ((await server.Http.GetAsync("-/ready")).IsSuccessStatusCode) return server; }
            catch (HttpRequestException) { }
            if (DateTime.UtcNow > deadline) throw new TimeoutException("prometheus did not get ready in 60 s");
            await Task.Delay(200);
        }
    }

    /// <summary>An instant query's result vector: (labels, value) per series.</summary>
    public async Task<List<(Dictionary<string, string> Labels, double Value)>> QueryAsync(string promql)
    {
        var body = await Http.GetFromJsonAsync<JsonElement>($"api/v1/query?query={Uri.EscapeDataString(promql)}");
        return body.GetProperty("data").GetProperty("result").EnumerateArray().Select(r => (
            r.GetProperty("metric").EnumerateObject().ToDictionary(p => p.Name, p => p.Value.GetString()!),
            double.Parse(r.GetProperty("value")[1].GetString()!, System.Globalization.CultureInfo.InvariantCulture))).ToList();
    }

    /// <summary>Runs promtool with <paramref name="stdin"/> piped in (e.g. a /metrics scrape for <c>check metrics</c>).</summary>
    public static async Task<(int Exit, string Output)> PromtoolAsync(string? stdin, params string[] args)
    {
        var psi = new ProcessStartInfo(Path.Combine(Path.GetDirectoryName(Binary) ?? "", "promtool"))
        {
            RedirectStandardInput = true, RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false,
        };
        foreach (var a in args) psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var output = p.StandardOutput.ReadToEndAsync();
        var error = p.StandardError.ReadToEndAsync();
        if (stdin is not null) await p.StandardInput.WriteAsync(stdin);
        p.StandardInput.Close();
        await p.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(60));
        return (p.ExitCode, await output + await error);
    }

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited) { Signals.Send(_process.Id, Signals.SigTerm); if (!_process.WaitForExit(10_000)) _process.Kill(); }
        _process.Dispose();
        Http.Dispose();
        try { Directory.Delete(_dir, recursive: true); } catch (IOException) { }
        await Task.CompletedTask;
    }
}
