using System.Diagnostics;
using System.Net.Sockets;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// The container path of the service fixtures. Testcontainers does not restore from the NuGet mirror
/// (SSH.NET, Docker.DotNet.Enhanced.X509 missing), so the fixtures drive the docker CLI when an engine answers.
/// </summary>
public static class DockerCli
{
    public static async Task<bool> EngineAnswersAsync()
    {
        const string socket = "/var/run/docker.sock";
        if (!File.Exists(socket)) return false;
        try
        {
            using var handler = new SocketsHttpHandler
            {
                ConnectCallback = async (_, ct) =>
                {
                    var s = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
                    await s.ConnectAsync(new UnixDomainSocketEndPoint(socket), ct);
                    return new NetworkStream(s, ownsSocket: true);
                },
            };
            using var http = new HttpClient(handler) { Timeout = TimeSpan.FromSeconds(2) };
            return (await http.GetAsync("http://docker/_ping")).IsSuccessStatusCode;
        }
        catch (Exception) { return false; }
    }

    public static async Task RunAsync(string args)
    {
        using var p = Process.Start(new ProcessStartInfo("docker", args) { RedirectStandardOutput = true, RedirectStandardError = true })!;
        var err = p.StandardError.ReadToEndAsync();
        await p.WaitForExitAsync();
        if (p.ExitCode != 0) throw new InvalidOperationException($"docker {args} failed: {await err}");
    }
}
