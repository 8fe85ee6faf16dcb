using System.Diagnostics;

namespace Magpie.Tests.Fixtures;

/// <summary>Runs a `magpie` command (e.g. `produce …`) to completion, as a user would from a shell.</summary>
public static class MagpieCli
{
    public static Task<(int ExitCode, string Output)> RunAsync(TimeSpan timeout, params string[] args) => RunAsync(timeout, [], args);

    /// <param name="environment">Variables set for the command (settings as <c>MAGPIE__…</c>).</param>
    public static async Task<(int ExitCode, string Output)> RunAsync(TimeSpan timeout, Dictionary<string, string> environment, params string[] args)
    {
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var (name, value) in environment) psi.Environment[name] = value;
        psi.ArgumentList.Add(RepoPaths.MagpieDll);
        foreach (var a in args) psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(timeout);
        try { await p.WaitForExitAsync(cts.Token); }
        catch (OperationCanceledException) { p.Kill(entireProcessTree: true); throw new TimeoutException($"magpie {string.Join(' ', args)} did not finish in {timeout}"); }
        return (p.ExitCode, await stdout + await stderr);
    }
}
