using System.Net;
using System.Net.Sockets;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Http;

/// <summary>A port another program holds stops <c>magpie run</c> with one line and a failing exit code, for HTTP and PostgreSQL alike.</summary>
public sealed class PortInUseTests
{
    [Theory]
    [InlineData("http", "magpie: Failed to bind to address http://127.0.0.1:")]
    [InlineData("pg", "magpie: the PostgreSQL endpoint cannot listen on 127.0.0.1:")]
    public async Task A_busy_port_stops_magpie_run_with_one_line(string which, string expected)
    {
        using var holder = new TcpListener(IPAddress.Loopback, 0);
        holder.Start();
        var busy = ((IPEndPoint)holder.LocalEndpoint).Port.ToString();
        var dataDir = Directory.CreateTempSubdirectory("magpie-busy-").FullName;
        var (http, pg) = which == "http" ? (busy, FreePort.Next().ToString()) : (FreePort.Next().ToString(), busy);
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "run", "--data-dir", dataDir, "--http-port", http, "--pg-port", pg);
        Assert.Equal(1, exit);
        // Everything before it is the ordinary start-up log; the failure is one line, with no stack trace.
        var lines = output.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);
        Assert.StartsWith(expected + busy, lines[^1]);
        Assert.DoesNotContain(lines, l => l.StartsWith("at ", StringComparison.Ordinal));
        Directory.Delete(dataDir, recursive: true);
    }
}
