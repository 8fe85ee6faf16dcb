using System.Diagnostics;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A container engine serving the Docker API for a test that runs containers itself (compose): the environment's
/// <c>DOCKER_HOST</c> when it names a unix socket that answers, else podman's API service started here on a socket in a temp
/// dir and stopped by pid. Needs Debian's podman, runc and docker-compose, and the stand-in images of
/// <c>deploy/local-images.sh</c>, which <see cref="ImagesAsync"/> builds (or keeps).
/// </summary>
public sealed class ContainerEngine : IAsyncDisposable
{
    private readonly Process? _service;
    private readonly string? _dir;

    private ContainerEngine(string dockerHost, Process? service, string? dir) => (DockerHost, _service, _dir) = (dockerHost, service, dir);

    /// <summary>unix:///… : what DOCKER_HOST is set to for docker-compose.</summary>
    public string DockerHost { get; }

    public static async Task<ContainerEngine> StartAsync()
    {
        foreach (var tool in (string[])["podman", "runc", "docker-compose", "debootstrap"])
            if (!OnPath(tool))
                throw new InvalidOperationException($"the compose test needs {tool}: apt-get install podman runc debootstrap docker-compose (.ci/run installs them)");
        if (Environment.GetEnvironmentVariable("DOCKER_HOST") is { Length: > 0 } given && given.StartsWith("unix://", StringComparison.Ordinal)
            && File.Exists(given["unix://".Length..]))
            return new ContainerEngine(given, null, null);
        var dir = Directory.CreateTempSubdirectory("magpie-engine-").FullName;
        var socket = Path.Combine(dir, "podman.sock");
        var psi = new ProcessStartInfo("podman", ["system", "service", "--time=0", $"unix://{socket}"]) { RedirectStandardOutput = true, RedirectStandardError = true };
        var service = Process.Start(psi)!;
        service.OutputDataReceived += (_, _) => { };
        service.ErrorDataReceived += (_, _) => { };
        service.BeginOutputReadLine();
        service.BeginErrorReadLine();
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (!File.Exists(socket))
        {
            if (service.HasExited || DateTime.UtcNow > deadline) throw new InvalidOperationException($"podman system service did not open {socket} (exit {(service.HasExited ? service.ExitCode : -1)})");
            await Task.Delay(100);
        }
        return new ContainerEngine($"unix://{socket}", service, dir);
    }

    /// <summary>deploy/local-images.sh: the stand-ins for the images compose.yaml and the Dockerfile name. Returns its output.</summary>
    public static async Task<string> ImagesAsync(TimeSpan timeout)
    {
        var (exit, output) = await RunAsync("bash", [Path.Combine(RepoPaths.Root, "deploy", "local-images.sh")], timeout);
        if (exit != 0) throw new InvalidOperationException($"deploy/local-images.sh failed ({exit}):\n{output}");
        return output;
    }

    /// <summary>Runs a command to its end (killed past <paramref name="timeout"/>); its exit code and its output, both streams.</summary>
    public static async Task<(int Exit, string Output)> RunAsync(string file, IEnumerable<string> args, TimeSpan timeout, IReadOnlyDictionary<string, string>? environment = null)
    {
        var psi = new ProcessStartInfo(file, args) { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (var (name, value) in environment ?? new Dictionary<string, string>()) psi.Environment[name] = value;
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        try { await p.WaitForExitAsync().WaitAsync(timeout); }
        catch (TimeoutException)
        {
            p.Kill(entireProcessTree: true);
            throw new TimeoutException($"{file} {string.Join(' ', psi.ArgumentList)} did not end within {timeout}:\n{await stdout}{await stderr}");
        }
        return (p.ExitCode, (await stdout + await stderr).Trim());
    }

    private static bool OnPath(string tool) =>
        (Environment.GetEnvironmentVariable("PATH") ?? "").Split(':').Concat(["/usr/sbin", "/sbin"]).Any(d => File.Exists(Path.Combine(d, tool)));

    public async ValueTask DisposeAsync()
    {
        if (_service is not null) await Signals.StopAsync(_service, Signals.SigTerm, TimeSpan.FromSeconds(10));
        _service?.Dispose();
        if (_dir is not null) try { Directory.Delete(_dir, recursive: true); } catch (IOException) { }
    }
}
