using System.Diagnostics;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using Magpie.Security;

namespace Magpie.Query.Postgres;

/// <summary>
/// One client connection: startup (SSLRequest → TLS or 'N', cancel requests), authentication (trust, SCRAM-SHA-256,
/// cleartext when allowed), then the simple query protocol (several statements per query, empty queries) and the extended
/// one (Parse/Bind/Describe/Execute/Sync/Close/Flush, as Npgsql and pgx use it), each statement under a timeout and
/// cancellable by a CancelRequest. Errors are ErrorResponses with SQLSTATE codes; the connection stays usable.
/// </summary>
/// <remarks><paramref name="admission"/>: the session takes its slot when the startup message arrives; when the server is full, as
/// PostgreSQL does, it has still negotiated TLS and honoured a CancelRequest, and answers the startup message with 53300 instead
/// of authenticating.</remarks>
public sealed class PgSession(Stream stream, PgOptions options, X509Certificate2? certificate, IPgStatements statements, PgCancellations cancellations,
    PgAdmission.Pending admission)
{
    /// <summary>The session took one of the server's slots (its owner gives it back when the session ends).</summary>
    public bool HoldsSlot { get; private set; }

    private readonly PgWire _wire = new(stream);
    private readonly Dictionary<string, (string Sql, int[] ParameterTypes)> _prepared = [];
    private readonly Dictionary<string, Portal> _portals = [];
    private long _preparedChars, _portalChars;

    /// <summary>Statements and portals the session keeps now, and their text in characters (what the limits below bound).</summary>
    public (int Count, long Chars) Kept => (_prepared.Count + _portals.Count, _preparedChars + _portalChars);

    /// <summary>Named statements one session may keep (drivers that prepare automatically keep a few hundred at most).</summary>
    public const int MaxPrepared = 1_000;

    /// <summary>The text of the statements and portals one session keeps, in all (each is also held to the query length limit).</summary>
    public const long MaxKeptChars = 16L * 1024 * 1024;
    private CancellationTokenSource? _running;
    private bool _cancelledByClient;
    private long _statementStarted;

    private sealed class Portal(string sql, short[] resultFormats)
    {
        public string Sql { get; } = sql;
        public PgOutcome? Outcome { get; set; }
        public bool Binary(int column) => resultFormats.Length switch { 0 => false, 1 => resultFormats[0] == 1, _ => column < resultFormats.Length && resultFormats[column] == 1 };
    }

    private PgSessionInfo? _session;

    public async Task RunAsync(CancellationToken ct)
    {
        try
        {
            string? user;
            // The startup deadline, and a newer connection taking the place of this one while it has not spoken (PgAdmission).
            using (var startup = CancellationTokenSource.CreateLinkedTokenSource(ct, admission.Evicted))
            {
                startup.CancelAfter(options.StartupTimeout);
                try { user = await StartupAsync(startup.Token); }
                catch (OperationCanceledException) when (!ct.IsCancellationRequested) { return; }   // never authenticated in time: the slot goes back
            }
            if (user is null) return;
            var (pid, secret) = cancellations.Register(this);
            try
            {
                SendParameters(user);
                _wire.Begin('K').Int32(pid).Int32(secret).End();
                _wire.ReadyForQuery();
                await _wire.FlushAsync(ct);
                await LoopAsync(ct);
            }
            finally
            {
                cancellations.Unregister(pid);
                Forget();
            }
        }
        catch (PgException e) when (e.Fatal)
        {
            _wire.Error(e);
            try { await _wire.FlushAsync(ct); } catch (IOException) { }
        }
        catch (IOException) { }   // the client went away
    }

    /// <summary>A CancelRequest with this session's key: the statement running now stops with 57014.</summary>
    public void CancelByClient()
    {
        _cancelledByClient = true;
        _running?.Cancel();
    }

    private async Task<string?> StartupAsync(CancellationToken ct)
    {
        while (true)
        {
            // A zero-byte read waits for the client's first bytes without taking them, so the connection is marked as heard while
            // they still wait on the socket: no newer connection can take it for a silent one in between (PgAdmission looks there).
            _ = await _wire.Stream.ReadAsync(Memory<byte>.Empty, ct);
            admission.Heard();
            var body = await _wire.ReadStartupAsync(ct);
            if (body is null) return null;
            var r = new PgReader(body);
            var code = r.Int32();
            switch (code)
            {
                case 80877103:   // SSLRequest
                    if (certificate is null || _wire.Stream is SslStream) { await _wire.Stream.WriteAsync("N"u8.ToArray(), ct); continue; }
                    await _wire.Stream.WriteAsync("S"u8.ToArray(), ct);
                    var tls = new SslStream(_wire.Stream);
                    await tls.AuthenticateAsServerAsync(new SslServerAuthenticationOptions { ServerCertificate = certificate }, ct);
                    _wire.Stream = tls;
                    continue;
                case 80877104:   // GSSENCRequest: not offered
                    await _wire.Stream.WriteAsync("N"u8.ToArray(), ct);
                    continue;
                case 80877102:   // CancelRequest: pid, secret; no answer
                    cancellations.Cancel(r.Int32(), r.Int32());
                    return null;
                case 196608:
                    var parameters = new Dictionary<string, string>();
                    while (!r.End)
                    {
                        var name = r.CString();
                        if (name.Length == 0) break;
                        parameters[name] = r.CString();
                    }
                    var user = parameters.GetValueOrDefault("user") ?? throw new PgException(PgException.InvalidAuthorization, "no user in the startup message", fatal: true);
                    // As PostgreSQL: the database defaults to the user's name.
                    _session = new PgSessionInfo(user, parameters.GetValueOrDefault("database") is { Length: > 0 } db ? db : user, parameters.GetValueOrDefault("application_name") ?? "");
                    if (!admission.Spoke()) throw new PgException(PgException.TooManyConnections, $"sorry, too many clients already ({options.MaxConnections})", fatal: true);
                    HoldsSlot = true;
                    QueryMetrics.PgSessionOpened();
                    // hostssl: with a certificate, every session is encrypted (a client with sslmode=disable would send the key in clear).
                    if (certificate is not null && _wire.Stream is not SslStream)
                        throw new PgException(PgException.InvalidAuthorization, "this server accepts TLS connections only: connect with sslmode=require (or prefer)", fatal: true);
                    await AuthenticateAsync(user, ct);
                    return user;
                default:
                    throw new PgException(PgException.ProtocolViolation, $"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}: Magpie speaks 3.0", fatal: true);
            }
        }
    }

    private async Task AuthenticateAsync(string user, CancellationToken ct)
    {
        if (options.Trusts) { _wire.Authentication(0); return; }   // no key: trust (loopback only, or --unsecured)
        var failed = new PgException(PgException.InvalidPassword, $"password authentication failed for user \"{SqlText.Shorten(user)}\"", fatal: true);
        var key = options.Keys?.Find(user);
        if (options.AllowCleartext)
        {
            _wire.Authentication(3);
            await _wire.FlushAsync(ct);
            var m = await ExpectPasswordAsync(ct);
            if (key is null || options.Keys!.Authenticate(new PgReader(m).CString()) is not { } matched || matched.Name != key.Name) throw await FailedAsync(user, failed, ct);
            _wire.Authentication(0);
            return;
        }
        _wire.Authentication(10, "SCRAM-SHA-256\0\0"u8);
        await _wire.FlushAsync(ct);
        var initial = await ExpectPasswordAsync(ct);
        var (mechanism, clientFirst) = ReadInitial(initial);
        if (mechanism != "SCRAM-SHA-256") throw new PgException(PgException.ProtocolViolation, $"SASL mechanism {mechanism} is not offered", fatal: true);
        // An unknown user goes through the exchange too (against a verifier nobody matches), so the answer doesn't say which was wrong.
        var scram = new ScramSha256(key?.Scram ?? ScramVerifier.Nobody());
        _wire.Authentication(11, Encoding.UTF8.GetBytes(scram.First(clientFirst)));
        await _wire.FlushAsync(ct);
        var final = scram.Final(Encoding.UTF8.GetString(await ExpectPasswordAsync(ct)));
        if (final is null || key is null) throw await FailedAsync(user, failed, ct);
        _wire.Authentication(12, Encoding.UTF8.GetBytes(final));
        _wire.Authentication(0);
    }

    /// <summary>The failure is answered late (<see cref="FailedLogins"/>); too many waiting from this address: refused at once.</summary>
    private async Task<PgException> FailedAsync(string user, PgException failed, CancellationToken ct)
    {
        if (options.FailedLogins is { } failures && !await failures.FailedAsync(admission.Source, "PostgreSQL", $"user \"{SqlText.Shorten(user)}\"", ct))
            return new PgException(PgException.TooManyConnections, "too many failed logins from this address are waiting for an answer; retry later", fatal: true);
        return failed;
    }

    private static (string Mechanism, string Data) ReadInitial(byte[] body)
    {
        var r = new PgReader(body);
        var mechanism = r.CString();
        var n = r.Int32();
        return (mechanism, n < 0 ? "" : Encoding.UTF8.GetString(r.Bytes(n)));
    }

    private async Task<byte[]> ExpectPasswordAsync(CancellationToken ct)
    {
        var m = await _wire.ReadAsync(ct) ?? throw new IOException("the client left during authentication");
        if (m.Type != 'p') throw new PgException(PgException.ProtocolViolation, $"expected a password message, got '{m.Type}'", fatal: true);
        return m.Body;
    }

    private void SendParameters(string user)
    {
        foreach (var (name, value) in new Dictionary<string, string>
        {
            ["server_version"] = "16.0 (Magpie)", ["server_encoding"] = "UTF8", ["client_encoding"] = "UTF8", ["DateStyle"] = "ISO, MDY",
            ["IntervalStyle"] = "postgres", ["TimeZone"] = "UTC", ["integer_datetimes"] = "on", ["standard_conforming_strings"] = "on",
            ["is_superuser"] = "off", ["session_authorization"] = user, ["application_name"] = _session!.ApplicationName,
        })
            _wire.ParameterStatus(name, value);
    }

    private async Task LoopAsync(CancellationToken ct)
    {
        var skipToSync = false;   // after an error in the extended protocol, until Sync
        while (await _wire.ReadAsync(ct) is { } m)
        {
            if (m.Type == 'X') return;
            if (skipToSync && m.Type != 'S') continue;
            try
            {
                switch (m.Type)
                {
                    case 'Q': await SimpleQueryAsync(new PgReader(m.Body).CString(), ct); break;
                    case 'P': Parse(m.Body); break;
                    case 'B': Bind(m.Body); break;
                    case 'D': await DescribeAsync(m.Body, ct); break;
                    case 'E': await ExecuteAsync(m.Body, ct); break;
                    case 'C': Close(m.Body); break;
                    case 'H': await _wire.FlushAsync(ct); break;
                    case 'S':
                        skipToSync = false;
                        ForgetPortal("");
                        _wire.ReadyForQuery();
                        await _wire.FlushAsync(ct);
                        break;
                    default: throw new PgException(PgException.ProtocolViolation, $"unsupported message type '{m.Type}'");
                }
            }
            catch (Exception e) when (StatementError(e) is { } error)
            {
                _wire.Error(error);
                if (m.Type == 'Q') _wire.ReadyForQuery();
                else skipToSync = true;
                await _wire.FlushAsync(ct);
            }
        }
    }

    /// <summary>
    /// What a failed message answers, the session going on: its own error, a query's problem (a parse or plan error of RQL or of the
    /// RQL a SELECT became, however late it surfaces: a streamed result plans when its first row is read) with its SQLSTATE, and
    /// anything unforeseen as XX000. Null for what ends the session: a fatal error, the client gone, the server stopping.
    /// </summary>
    private static PgException? StatementError(Exception e) => e switch
    {
        PgException { Fatal: true } or IOException or OperationCanceledException or ObjectDisposedException => null,
        PgException pg => pg,
        QueryProblem problem => PgException.Of(problem),
        _ => new PgException(PgException.InternalError, $"the statement failed: {e.Message}"),
    };

    private async Task SimpleQueryAsync(string sql, CancellationToken ct)
    {
        var parts = SqlText.Split(sql);
        if (parts.Count == 0) _wire.EmptyQuery();
        foreach (var statement in parts)
        {
            var outcome = await RunAsync(statement, ct);
            await SendAsync(outcome, _ => false, describe: true, ct);
        }
        _wire.ReadyForQuery();
        await _wire.FlushAsync(ct);
    }

    private void Parse(byte[] body)
    {
        var r = new PgReader(body);
        var name = r.CString();
        var sql = r.CString();
        var types = new int[r.Count()];
        for (var i = 0; i < types.Length; i++) types[i] = r.Int32();
        // The unnamed statement and portal are replaced by the next of their kind (one each, within the message limit); named
        // ones stay until closed, so they are what the caps count. A statement past the query limit is refused when it runs.
        if (name.Length > 0)
        {
            var replaced = _prepared.TryGetValue(name, out var old) ? old.Sql.Length : -1;
            if (replaced < 0 && Named(_prepared) >= MaxPrepared)
                throw new PgException(PgException.ProgramLimitExceeded, $"this session keeps {MaxPrepared:N0} prepared statements, the most it may: close some (Close, DEALLOCATE) before preparing more");
            if (_preparedChars - Math.Max(replaced, 0) + sql.Length + _portalChars > MaxKeptChars)
                throw new PgException(PgException.ProgramLimitExceeded, $"this session's prepared statements and portals hold {MaxKeptChars / (1024 * 1024)} MiB of text, the most it may: close some (Close, DEALLOCATE)");
            ForgetStatement(name);
            _preparedChars += sql.Length;
        }
        _prepared[name] = (sql, types);
        _wire.Begin('1').End();
    }

    /// <summary>How many named entries a map holds (all but the unnamed one), without walking it.</summary>
    private static int Named<T>(Dictionary<string, T> kept) => kept.Count - (kept.ContainsKey("") ? 1 : 0);

    private void ForgetStatement(string name)
    {
        if (_prepared.Remove(name, out var gone) && name.Length > 0) _preparedChars -= gone.Sql.Length;
    }

    private void ForgetPortal(string name)
    {
        if (_portals.Remove(name, out var gone) && name.Length > 0) _portalChars -= gone.Sql.Length;
    }

    /// <summary>What the session kept goes with it: nothing a closed connection prepared outlives it.</summary>
    private void Forget()
    {
        _prepared.Clear();
        _portals.Clear();
        _preparedChars = _portalChars = 0;
    }

    private void Bind(byte[] body)
    {
        var r = new PgReader(body);
        var portal = r.CString();
        var statement = r.CString();
        if (!_prepared.TryGetValue(statement, out var prepared)) throw new PgException("26000", $"prepared statement \"{SqlText.Shorten(statement)}\" does not exist");
        var formats = new short[r.Count()];
        for (var i = 0; i < formats.Length; i++) formats[i] = r.Int16();
        var values = new string[r.Count()];
        for (var i = 0; i < values.Length; i++)
        {
            var n = r.Int32();
            var binary = formats.Length == 1 ? formats[0] == 1 : i < formats.Length && formats[i] == 1;
            values[i] = n < 0 ? "NULL" : PgValues.Literal(i < prepared.ParameterTypes.Length ? prepared.ParameterTypes[i] : 0, binary, r.Bytes(n));
        }
        var results = new short[r.Count()];
        for (var i = 0; i < results.Length; i++) results[i] = r.Int16();
        // RQL (from …) quotes as RQL does: a backslash escapes, '' does not (SQL's quoting would break O'Brien or a C:\ path).
        if (SqlText.IsRql(prepared.Sql)) values = [.. values.Select(PgValues.AsRqlLiteral)];
        var sql = SqlText.Substitute(prepared.Sql, values);
        ForgetPortal(portal);
        if (portal.Length > 0)
        {
            if (Named(_portals) >= MaxPrepared)
                throw new PgException(PgException.ProgramLimitExceeded, $"this session keeps {MaxPrepared:N0} open portals, the most it may: close some before binding more");
            if (_preparedChars + _portalChars + sql.Length > MaxKeptChars)
                throw new PgException(PgException.ProgramLimitExceeded, $"this session's prepared statements and portals hold {MaxKeptChars / (1024 * 1024)} MiB of text, the most it may: close some (Close, DEALLOCATE)");
            _portalChars += sql.Length;
        }
        _portals[portal] = new Portal(sql, results);
        _wire.Begin('2').End();
    }

    private async Task DescribeAsync(byte[] body, CancellationToken ct)
    {
        var r = new PgReader(body);
        var kind = (char)r.Byte();
        var name = r.CString();
        if (kind == 'S')
        {
            if (!_prepared.TryGetValue(name, out var prepared)) throw new PgException("26000", $"prepared statement \"{SqlText.Shorten(name)}\" does not exist");
            _wire.Begin('t').Int16((short)prepared.ParameterTypes.Length);
            foreach (var t in prepared.ParameterTypes) _wire.Int32(t == 0 ? (int)PgType.Text : t);
            _wire.End();
            // The columns: the statement run with its parameters as NULL (its rows are not read).
            var outcome = await RunAsync(SqlText.Substitute(prepared.Sql, [.. prepared.ParameterTypes.Select(_ => "NULL")]), ct);
            Describe(outcome, _ => false);
            return;
        }
        var portal = _portals.GetValueOrDefault(name) ?? throw new PgException("34000", $"portal \"{SqlText.Shorten(name)}\" does not exist");
        portal.Outcome ??= await RunAsync(portal.Sql, ct);
        Describe(portal.Outcome, portal.Binary);
    }

    private void Describe(PgOutcome outcome, Func<int, bool> binary)
    {
        if (outcome is PgRows rows) _wire.RowDescription(rows.Columns, binary);
        else _wire.Begin('n').End();   // NoData
    }

    private async Task ExecuteAsync(byte[] body, CancellationToken ct)
    {
        var r = new PgReader(body);
        var name = r.CString();
        var portal = _portals.GetValueOrDefault(name) ?? throw new PgException("34000", $"portal \"{SqlText.Shorten(name)}\" does not exist");
        var outcome = portal.Outcome ?? await RunAsync(portal.Sql, ct);
        portal.Outcome = null;   // executed: a second Execute runs the statement again
        await SendAsync(outcome, portal.Binary, describe: false, ct);
    }

    private void Close(byte[] body)
    {
        var r = new PgReader(body);
        var kind = (char)r.Byte();
        var name = r.CString();
        if (kind == 'S') ForgetStatement(name);
        else ForgetPortal(name);
        _wire.Begin('3').End();
    }

    /// <summary>Runs a statement under the statement timeout, cancellable by a CancelRequest.</summary>
    private async Task<PgOutcome> RunAsync(string sql, CancellationToken ct)
    {
        using var running = Running(ct);
        _statementStarted = Stopwatch.GetTimestamp();
        try { return await statements.RunAsync(sql, _session!, running.Token); }
        catch (OperationCanceledException) when (!ct.IsCancellationRequested) { throw Canceled(); }
        finally { _running = null; }
    }

    /// <summary>The token of the statement starting now: the statement timeout, and <see cref="CancelByClient"/>.</summary>
    private CancellationTokenSource Running(CancellationToken ct)
    {
        var running = CancellationTokenSource.CreateLinkedTokenSource(ct);
        running.CancelAfter(options.StatementTimeout);
        _cancelledByClient = false;
        return _running = running;
    }

    private PgException Canceled() => new(PgException.QueryCanceled,
        _cancelledByClient ? "canceling statement due to user request" : "canceling statement due to statement timeout");

    /// <summary>
    /// Rows are written as they come and sent every 64 KB, so a large result never sits in memory whole; the statement
    /// timeout restarts with each send, so it bounds a stuck query, not a long result the client keeps reading.
    /// </summary>
    private async Task SendAsync(PgOutcome outcome, Func<int, bool> binary, bool describe, CancellationToken ct)
    {
        switch (outcome)
        {
            case PgEmptyQuery: _wire.EmptyQuery(); return;
            case PgCommand c: _wire.CommandComplete(c.Tag); return;
            case PgRows rows:
                if (describe) _wire.RowDescription(rows.Columns, binary);
                using (var running = Running(ct))
                {
                    long n = 0, sent = 0;
                    var failed = true;
                    try
                    {
                        await foreach (var row in rows.Rows.WithCancellation(running.Token))
                        {
                            _wire.DataRow(rows.Columns, row, binary);
                            n++;
                            if (_wire.Pending > 64 * 1024)
                            {
                                sent += _wire.Pending;
                                await _wire.FlushAsync(running.Token);
                                // The timeout bounds waiting for rows, not a long result a client keeps reading.
                                running.CancelAfter(options.StatementTimeout);
                            }
                        }
                        failed = false;
                    }
                    catch (OperationCanceledException) when (!ct.IsCancellationRequested) { throw Canceled(); }
                    finally
                    {
                        _running = null;
                        QueryMetrics.Streamed("pg", sent + _wire.Pending);
                        QueryMetrics.Queried("sql", _statementStarted, failed);
                    }
                    _wire.CommandComplete($"SELECT {n}");
                }
                return;
        }
    }
}
