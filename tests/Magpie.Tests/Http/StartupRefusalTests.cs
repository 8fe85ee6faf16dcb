using System.Net;
using System.Net.Sockets;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Http;

/// <summary>
/// What stops <c>magpie run</c> before it serves: a port another program holds (HTTP and PostgreSQL alike), a setting out of
/// its range. One line naming it, a failing exit code, never a stack trace or a value quietly replaced.
/// </summary>
public sealed class StartupRefusalTests
{
    [Theory]
    [InlineData("MAGPIE__MAXCONCURRENTREQUESTS", "0", "setting MaxConcurrentRequests must be 1 to 1,000,000, not 0")]
    [InlineData("MAGPIE__PG__MAXCONNECTIONS", "-3", "setting Pg:MaxConnections must be 1 to 100,000, not -3")]
    [InlineData("MAGPIE__MAXJSONDEPTH", "100000", "setting MaxJsonDepth must be 1 to 512, not 100,000")]
    [InlineData("MAGPIE__COMPACTION__REVISIONS", "0", "setting Compaction:Revisions must be 1 or more, not 0")]
    [InlineData("MAGPIE__MAXRETRYDELAYSECONDS", "0", "setting MaxRetryDelaySeconds must be 1 to 86,400, not 0")]
    [InlineData("MAGPIE__RETRYDELAYMILLISECONDS", "60000", "setting RetryDelayMilliseconds (60,000) must not exceed MaxRetryDelaySeconds (30 s)")]
    public async Task A_setting_out_of_range_stops_magpie_run_with_one_line(string variable, string value, string expected)
    {
        var dataDir = Directory.CreateTempSubdirectory("magpie-settings-").FullName;
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), new Dictionary<string, string> { [variable] = value },
            "run", "--data-dir", dataDir, "--http-port", FreePort.Next().ToString(), "--pg-port", "-1");
        Assert.Equal(1, exit);
        Assert.Equal($"magpie: {expected}", Assert.Single(output.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)));
        Directory.Delete(dataDir, recursive: true);
    }

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
