using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Magpie.Query.Postgres;

/// <summary>Running sessions by their cancel key (BackendKeyData), for CancelRequests arriving on other connections.</summary>
public sealed class PgCancellations
{
    private readonly ConcurrentDictionary<int, (int Secret, PgSession Session)> _sessions = new();
    private int _next = Random.Shared.Next(1000, 100_000);

    public (int Pid, int Secret) Register(PgSession session)
    {
        var pid = Interlocked.Increment(ref _next);
        var secret = RandomNumberGenerator.GetInt32(int.MaxValue);
        _sessions[pid] = (secret, session);
        return (pid, secret);
    }

    public void Unregister(int pid) => _sessions.TryRemove(pid, out _);

    public void Cancel(int pid, int secret)
    {
        if (_sessions.TryGetValue(pid, out var s) && s.Secret == secret) s.Session.CancelByClient();
    }
}

/// <summary>
/// The PostgreSQL wire endpoint of the query target: a TCP listener (loopback only when no user is configured) serving at
/// most <see cref="PgOptions.MaxConnections"/> sessions at once; one more is told 53300 and closed (<see cref="PgAdmission"/>).
/// </summary>
public sealed class PgServer(PgOptions options, Func<IPgStatements> statements, ILogger<PgServer> log) : BackgroundService
{
    private readonly PgCancellations _cancellations = new();
    private readonly PgAdmission _admission = new(options);

    public int Port { get; private set; }

    private TcpListener? _listener;

    /// <summary>Binds the port before the host reports started: a port in use stops the process with one line, as a busy HTTP port does.</summary>
    public override Task StartAsync(CancellationToken cancellationToken)
    {
        var listener = new TcpListener(options.Address, options.Port);
        try { listener.Start(); }
        catch (SocketException e)
        {
            throw new IOException($"the PostgreSQL endpoint cannot listen on {options.Address}:{options.Port}: {e.Message} (another PostgreSQL? set --pg-port or Magpie:Pg:Port, -1 for off)", e);
        }
        _listener = listener;
        Port = ((IPEndPoint)listener.LocalEndpoint).Port;
        return base.StartAsync(cancellationToken);
    }

    protected override async Task ExecuteAsync(CancellationToken ct)
    {
        var certificate = options.Certificate;
        var listener = _listener!;
        if (options.Trusts)
            log.LogWarning("PostgreSQL endpoint on {Address}:{Port}: no API key exists, so it trusts every connection (like a fresh PostgreSQL's local trust); once a key exists, users log in as the key's name with the key as password", options.Address, Port);
        else log.LogInformation("PostgreSQL endpoint on {Address}:{Port}, API keys as users, {Auth}{Tls}", options.Address, Port,
            options.AllowCleartext ? "cleartext passwords" : "SCRAM-SHA-256", certificate is null ? "" : ", TLS");
        try
        {
            while (!ct.IsCancellationRequested)
            {
                var client = await listener.AcceptTcpClientAsync(ct);
                _ = ServeAsync(client, certificate, ct);
            }
        }
        catch (OperationCanceledException) { }
        finally { listener.Stop(); }
    }

    private async Task ServeAsync(TcpClient client, X509Certificate2? certificate, CancellationToken ct)
    {
        using var _ = client;
        client.NoDelay = true;
        using var pending = _admission.Enter(Source(client), () => client.Available > 0);
        var session = new PgSession(client.GetStream(), options, certificate, statements(), _cancellations, pending);
        try { await session.RunAsync(ct); }
        catch (Exception e) when (e is OperationCanceledException or IOException or System.Security.Authentication.AuthenticationException) { }
        catch (Exception e) { log.LogWarning(e, "PostgreSQL session ended by an error"); }
        finally
        {
            if (session.HoldsSlot)
            {
                _admission.Release();
                QueryMetrics.PgSessionClosed();
            }
        }
    }

    private static string Source(TcpClient client) => (client.Client.RemoteEndPoint as IPEndPoint)?.Address.ToString() ?? "unknown";
}
