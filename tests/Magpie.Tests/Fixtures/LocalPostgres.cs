using System.Collections.Concurrent;
using System.Diagnostics;
using Npgsql;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A real PostgreSQL (Debian's <c>postgresql</c> package; <c>PG_BIN</c> overrides where its binaries are) run by the test on a
/// given port with its data in a temp dir, C collation, trust on loopback — the reference the PostgreSQL endpoint's answers
/// are compared with. PostgreSQL refuses to run as root, so under root (CI) it runs as the package's <c>postgres</c> user
/// (<c>setpriv</c> execs, so the pid is the server's). Stopped by pid.
/// </summary>
public sealed class LocalPostgres : IAsyncDisposable
{
    private readonly string _dir;
    private readonly ConcurrentQueue<string> _output = new();
    private Process? _server;

    private LocalPostgres(string dir, int port) => (_dir, Port) = (dir, port);

    public int Port { get; }

    private string ConnectionString => $"Host=127.0.0.1;Port={Port};Username=postgres;Database=postgres;Pooling=false";

    public static async Task<LocalPostgres> StartAsync(int port)
    {
        var bin = Environment.GetEnvironmentVariable("PG_BIN") is { Length: > 0 } b ? b
            : Directory.Exists("/usr/lib/postgresql") ? Directory.GetDirectories("/usr/lib/postgresql").Select(d => Path.Combine(d, "bin")).Where(Directory.Exists).OrderDescending().FirstOrDefault() : null;
        if (bin is null || !File.Exists(Path.Combine(bin, "postgres")))
            throw new InvalidOperationException("no PostgreSQL server for the tests: apt-get install postgresql (or set PG_BIN to its bin folder)");
        var pg = new LocalPostgres(Directory.CreateTempSubdirectory("magpie-postgres-").FullName, port);
        if (Environment.UserName == "root") await RunAsync("chown", ["-R", "postgres:postgres", pg._dir], asPostgres: false);
        var data = Path.Combine(pg._dir, "data");
        await RunAsync(Path.Combine(bin, "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"], asPostgres: true);
        pg._server = Start(Path.Combine(bin, "postgres"),
            ["-D", data, "-p", pg.Port.ToString(), "-k", pg._dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "TimeZone=UTC"], pg._output);
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (true)
        {
            try
            {
                await using var db = new NpgsqlConnection(pg.ConnectionString);
                await db.OpenAsync();
                return pg;
            }
            catch (Exception e) when (e is NpgsqlException or System.Net.Sockets.SocketException)
            {
                if (pg._server.HasExited || DateTime.UtcNow > deadline)
                    throw new InvalidOperationException($"PostgreSQL did not start:\n{string.Join('\n', pg._output)}", e);
                await Task.Delay(200);
            }
        }
    }

    private static Process Start(string file, string[] args, ConcurrentQueue<string> output)
    {
        var psi = AsPostgres(file, args);
        psi.RedirectStandardOutput = psi.RedirectStandardError = true;
        var p = Process.Start(psi)!;
        p.OutputDataReceived += (_, e) => { if (e.Data is not null) output.Enqueue(e.Data); };
        p.ErrorDataReceived += (_, e) => { if (e.Data is not null) output.Enqueue(e.Data); };
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        return p;
    }

    private static async Task RunAsync(string file, string[] args, bool asPostgres)
    {
        var psi = asPostgres ? AsPostgres(file, args) : new ProcessStartInfo(file, args);
        psi.RedirectStandardOutput = psi.RedirectStandardError = true;
        using var p = Process.Start(psi)!;
        var text = p.StandardOutput.ReadToEndAsync();
        var error = p.StandardError.ReadToEndAsync();
        await p.WaitForExitAsync().WaitAsync(TimeSpan.FromMinutes(2));
        if (p.ExitCode != 0) throw new InvalidOperationException($"{file} failed ({p.ExitCode}): {await text}{await error}");
    }

    private static ProcessStartInfo AsPostgres(string file, string[] args)
    {
        if (Environment.UserName != "root") return new ProcessStartInfo(file, args);
        var psi = new ProcessStartInfo("setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", file, .. args]);
        psi.Environment["HOME"] = "/tmp";
        return psi;
    }

    public async ValueTask DisposeAsync()
    {
        // SIGQUIT: PostgreSQL's immediate shutdown, which takes its backends down with it; SIGKILL if that hangs.
        if (_server is not null) await Signals.StopAsync(_server, 3, TimeSpan.FromSeconds(10));
        _server?.Dispose();
        try { Directory.Delete(_dir, recursive: true); } catch (Exception e) when (e is IOException or UnauthorizedAccessException) { }
    }
}
