using System.Diagnostics;
using System.Globalization;
using System.Net.Http.Json;
using System.Text.Json;

namespace Magpie.Tests.Deploy;

/// <summary>Asking a running Prometheus (compose's) over its HTTP API, and Debian's <c>promtool</c> for linting /metrics.</summary>
public static class Prometheus
{
    /// <summary>An instant query's result vector: (labels, value) per series.</summary>
    public static async Task<List<(Dictionary<string, string> Labels, double Value)>> QueryAsync(HttpClient prometheus, string promql)
    {
        var body = await prometheus.GetFromJsonAsync<JsonElement>($"api/v1/query?query={Uri.EscapeDataString(promql)}");
        return body.GetProperty("data").GetProperty("result").EnumerateArray().Select(r => (
            r.GetProperty("metric").EnumerateObject().ToDictionary(p => p.Name, p => p.Value.GetString()!),
            double.Parse(r.GetProperty("value")[1].GetString()!, CultureInfo.InvariantCulture))).ToList();
    }

    /// <summary>Runs promtool (<c>PROMTOOL</c> overrides where it is) with <paramref name="stdin"/> piped in (e.g. a /metrics scrape for <c>check metrics</c>).</summary>
    public static async Task<(int Exit, string Output)> PromtoolAsync(string? stdin, params string[] args)
    {
        var psi = new ProcessStartInfo(Environment.GetEnvironmentVariable("PROMTOOL") is { Length: > 0 } p ? p : "promtool")
        {
            RedirectStandardInput = true, RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false,
        };
        foreach (var a in args) psi.ArgumentList.Add(a);
        using var process = Process.Start(psi)!;
        var output = process.StandardOutput.ReadToEndAsync();
        var error = process.StandardError.ReadToEndAsync();
        if (stdin is not null) await process.StandardInput.WriteAsync(stdin);
        process.StandardInput.Close();
        await process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(60));
        return (process.ExitCode, await output + await error);
    }
}
