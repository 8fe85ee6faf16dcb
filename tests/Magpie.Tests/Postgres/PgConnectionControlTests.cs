using System.Diagnostics;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Magpie.Tests.Fixtures;
using Npgsql;

namespace Magpie.Tests.Postgres;

/// <summary>
/// The PostgreSQL endpoint's connection controls over real connections: TLS with the deployment's PEM certificate
/// (and refused without one), cancel requests, the per-statement timeout, and the connection limit, each answered with
/// PostgreSQL's SQLSTATE and leaving the session usable.
/// </summary>
public sealed class PgConnectionControlTests
{
    /// <summary>A Magpie with the deployment's one certificate (Magpie:Tls, PEM: HTTPS and the PostgreSQL endpoint alike), a
    /// read key named grafana, and <paramref name="settings"/>; and a connection string for it.</summary>
    private static async Task<(MagpieProcess Magpie, TestCertificate Certificate, string Secret, Func<string, string> Connection)> StartAsync(params (string Name, string Value)[] settings)
    {
        var certificate = TestCertificate.Create();
        var dataDir = Directory.CreateTempSubdirectory("magpie-pg-tls-").FullName;
        var secret = await TestKeys.CreateAsync(dataDir, "read", "grafana");
        var environment = certificate.Environment();
        foreach (var (name, value) in settings) environment[name] = value;
        var magpie = await MagpieProcess.StartAsync(dataDir: dataDir, environment: environment);
        return (magpie, certificate, secret, sslMode =>
            $"Host=127.0.0.1;Port={magpie.PgPort};Username=grafana;Password={secret};Database=magpie;Pooling=false;SSL Mode={sslMode};Server Compatibility Mode=NoTypeLoading;Timeout=5");
    }

    [Fact]
    public async Task Tls_cancel_requests_statement_timeouts_and_the_connection_limit_behave_like_postgresql()
    {
        var (started, certificate, secret, Connection) = await StartAsync(("MAGPIE__PG__STATEMENTTIMEOUTSECONDS", "2"), ("MAGPIE__PG__MAXCONNECTIONS", "3"),
            ("MAGPIE__PG__STARTUPTIMEOUTSECONDS", "2"));
        await using var magpie = started;

        // TLS: Npgsql and psql insist on it and get it.
        await using (var tls = new NpgsqlConnection(Connection("Require")))
        {
            await tls.OpenAsync();
            await using var one = new NpgsqlCommand("SELECT 1", tls);
            Assert.Equal("1", (await one.ExecuteScalarAsync())!.ToString());
        }
        var psql = await PostgresEndpointTests.PsqlAsync(magpie.PgPort, "select 1", password: secret, sslMode: "require");
        Assert.True(psql.Exit == 0, psql.Error);
        Assert.Equal("1", psql.Output.Trim());
        // Without a certificate the server answers SSLRequest with 'N', so a client requiring TLS stops.
        await using (var plain = await MagpieProcess.StartAsync())
        {
            var refused = await PostgresEndpointTests.PsqlAsync(plain.PgPort, "select 1", sslMode: "require");
            Assert.NotEqual(0, refused.Exit);
            Assert.Contains("server does not support SSL", refused.Error);
        }

        await using var db = new NpgsqlConnection(Connection("Prefer"));
        await db.OpenAsync();
        // A cancel request (Npgsql sends it on a second connection with the session's key) ends the running statement.
        await using (var sleep = new NpgsqlCommand("SELECT pg_sleep(20)", db))
        {
            var running = sleep.ExecuteScalarAsync();
            await Task.Delay(500);
            var clock = Stopwatch.StartNew();
            sleep.Cancel();
            var e = await Assert.ThrowsAnyAsync<Exception>(() => running);
            var pg = Assert.IsType<PostgresException>(e is OperationCanceledException { InnerException: { } inner } ? inner : e);
            Assert.Equal("57014", pg.SqlState);
            Assert.Contains("user request", pg.MessageText);
            Assert.True(clock.Elapsed < TimeSpan.FromSeconds(10), $"cancel took {clock.Elapsed}");
        }
        // The statement timeout (2 s here) ends a statement that waits too long; the session goes on.
        await using (var slow = new NpgsqlCommand("SELECT pg_sleep(10)", db) { CommandTimeout = 0 })
        {
            var clock = Stopwatch.StartNew();
            var e = await Assert.ThrowsAsync<PostgresException>(() => slow.ExecuteScalarAsync());
            Assert.Equal("57014", e.SqlState);
            Assert.Contains("statement timeout", e.MessageText);
            Assert.InRange(clock.Elapsed, TimeSpan.FromSeconds(1.5), TimeSpan.FromSeconds(8));
        }
        await using (var after = new NpgsqlCommand("SELECT 1", db))
            Assert.Equal("1", (await after.ExecuteScalarAsync())!.ToString());

        // The connection limit (3): two more sessions fit, the next is refused with 53300.
        await using var second = new NpgsqlConnection(Connection("Prefer"));
        await using var third = new NpgsqlConnection(Connection("Prefer"));
        await second.OpenAsync();
        await third.OpenAsync();
        await using var fourth = new NpgsqlConnection(Connection("Prefer"));
        Assert.Equal("53300", (await Assert.ThrowsAsync<PostgresException>(() => fourth.OpenAsync())).SqlState);
        await third.CloseAsync();
        await Task.Delay(200);   // the server frees the slot when it sees the Terminate
        await fourth.OpenAsync();
        await second.CloseAsync();
        await third.CloseAsync();
        await fourth.CloseAsync();
        await Task.Delay(200);

        // Connections that never send a startup packet hold their slots only until the startup timeout (2 s here).
        var silent = new List<System.Net.Sockets.TcpClient>();
        for (var i = 0; i < 3; i++)
        {
            var c = new System.Net.Sockets.TcpClient();
            await c.ConnectAsync("127.0.0.1", magpie.PgPort);
            silent.Add(c);
        }
        await Task.Delay(TimeSpan.FromSeconds(4));
        await using (var afterSilent = new NpgsqlConnection(Connection("Prefer")))
        {
            await afterSilent.OpenAsync();
            await using var one = new NpgsqlCommand("SELECT 1", afterSilent);
            Assert.Equal("1", (await one.ExecuteScalarAsync())!.ToString());
        }
        foreach (var c in silent) c.Dispose();

        try { Directory.Delete(Path.GetDirectoryName(certificate.CertificatePath)!, recursive: true); } catch (IOException) { }
    }

    [Fact]
    public async Task Silent_sockets_huge_startup_messages_and_plain_connections_to_a_tls_server_lock_nobody_out()
    {
        // Eight sessions; the pending places keep their default (128). Which silent socket goes when they run out is
        // PgAdmissionTests' (a flood past them makes a login a race with the flood's rate, which a loaded machine can lose).
        var (started, certificate, secret, connectionFor) = await StartAsync(("MAGPIE__PG__MAXCONNECTIONS", "8"));
        await using var magpie = started;
        var connection = connectionFor("Require");

        // The probe's flood, scaled to these limits: eight times as many silent sockets as sessions, each reopened when it closes.
        using var stop = new CancellationTokenSource();
        var flood = Enumerable.Range(0, 64).Select(_ => Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                using var silent = new System.Net.Sockets.TcpClient();
                try
                {
                    await silent.ConnectAsync("127.0.0.1", magpie.PgPort, stop.Token);
                    // Holds the socket without a byte until the server closes it (or the flood stops).
                    _ = await silent.GetStream().ReadAsync(new byte[1], stop.Token);
                }
                catch (Exception e) when (e is OperationCanceledException or IOException or System.Net.Sockets.SocketException) { }
            }
        })).ToList();
        await Task.Delay(1000);
        // Every login during the flood gets in, with valid keys; without the eviction of silent sockets none did (0 of 29).
        var clock = Stopwatch.StartNew();
        for (var i = 0; i < 10; i++)
        {
            await using var db = new NpgsqlConnection(connection);
            await db.OpenAsync();
            await using var one = new NpgsqlCommand("SELECT 1", db);
            Assert.Equal("1", (await one.ExecuteScalarAsync())!.ToString());
        }
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(30), $"10 logins took {clock.Elapsed}");
        stop.Cancel();
        await Task.WhenAll(flood);

        // A startup message of 1 MB (one huge parameter): the client reads an error, not a reset.
        using (var tcp = new System.Net.Sockets.TcpClient())
        {
            await tcp.ConnectAsync("127.0.0.1", magpie.PgPort);
            var stream = tcp.GetStream();
            var parameter = System.Text.Encoding.ASCII.GetBytes("user\0grafana\0application_name\0" + new string('x', 1 << 20) + "\0\0");
            var message = new byte[8 + parameter.Length];
            System.Buffers.Binary.BinaryPrimitives.WriteInt32BigEndian(message, message.Length);
            System.Buffers.Binary.BinaryPrimitives.WriteInt32BigEndian(message.AsSpan(4), 196608);
            parameter.CopyTo(message, 8);
            await stream.WriteAsync(message);
            var answer = new MemoryStream();
            var buffer = new byte[4096];
            int read;
            while ((read = await stream.ReadAsync(buffer).AsTask().WaitAsync(TimeSpan.FromSeconds(20))) > 0) answer.Write(buffer, 0, read);
            var text = System.Text.Encoding.ASCII.GetString(answer.ToArray());
            Assert.Equal((byte)'E', answer.ToArray()[0]);
            Assert.Contains("08P01", text);
            Assert.Contains("startup packet length", text);
        }

        // hostssl: with a certificate configured, a client that does not ask for TLS is refused before it sends its key.
        var plain = await PostgresEndpointTests.PsqlAsync(magpie.PgPort, "select 1", password: secret, sslMode: "disable");
        Assert.NotEqual(0, plain.Exit);
        Assert.Contains("TLS connections only", plain.Error);
        var encrypted = await PostgresEndpointTests.PsqlAsync(magpie.PgPort, "select 1", password: secret, sslMode: "require");
        Assert.True(encrypted.Exit == 0, encrypted.Error);

        try { Directory.Delete(Path.GetDirectoryName(certificate.CertificatePath)!, recursive: true); } catch (IOException) { }
    }

    [Fact]
    public async Task Prepared_statements_are_bounded_per_session_and_a_too_long_one_is_refused()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var connection = $"Host=127.0.0.1;Port={magpie.PgPort};Username=magpie;Database=magpie;Pooling=false;Server Compatibility Mode=NoTypeLoading;Timeout=5";
        await using var db = new NpgsqlConnection(connection);
        await db.OpenAsync();
        // A statement past the query length limit is refused (when it is described or run) with the limit's SQLSTATE.
        var huge = "SELECT '" + new string('x', 300 * 1024) + "'";
        await using (var tooLong = new NpgsqlCommand(huge, db))
        {
            var e = await Assert.ThrowsAsync<PostgresException>(() => tooLong.PrepareAsync());
            Assert.Equal("54001", e.SqlState);
        }
        // The 16 MiB of text a session may keep is checked by the extended-protocol fuzz target's kept crash
        // (tests/Magpie.Fuzz/crashes/pgextended/statements-past-the-text-cap), against the session itself.
        // (The statement parsed, then failed to describe: the server keeps it where Npgsql does not count it. A new session.)
        await db.CloseAsync();
        await db.OpenAsync();
        // 1,000 named statements are kept; the next is refused, and the session goes on.
        var prepared = new List<NpgsqlCommand>();
        for (var i = 0; i < 1_000; i++)
        {
            var cmd = new NpgsqlCommand($"SELECT {i}", db);
            await cmd.PrepareAsync();
            prepared.Add(cmd);
        }
        await using (var oneMore = new NpgsqlCommand("SELECT 1000", db))
        {
            var e = await Assert.ThrowsAsync<PostgresException>(() => oneMore.PrepareAsync());
            Assert.Equal("54000", e.SqlState);
            Assert.Contains("1,000 prepared statements", e.MessageText);
        }
        Assert.Equal(999, Convert.ToInt32(await prepared[999].ExecuteScalarAsync()));
        // Closing one makes room.
        await prepared[0].UnprepareAsync();
        await using (var room = new NpgsqlCommand("SELECT 1001", db))
        {
            await room.PrepareAsync();
            Assert.Equal(1001, Convert.ToInt32(await room.ExecuteScalarAsync()));
        }
    }
}
