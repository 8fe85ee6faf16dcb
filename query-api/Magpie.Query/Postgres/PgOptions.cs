using System.Net;
using System.Security.Cryptography.X509Certificates;
using Magpie.Security;

namespace Magpie.Query.Postgres;

/// <summary>
/// The PostgreSQL wire endpoint (<c>--pg-port</c> or <c>Magpie:Pg:*</c> settings). Its users are Magpie's API keys: the user name
/// is the key's name, the password the key (SCRAM-SHA-256 against the key's stored verifier). With no key it trusts every
/// connection, as a fresh PostgreSQL's local <c>trust</c> does, which Magpie allows on loopback only (or <c>--unsecured</c>).
/// </summary>
public sealed record PgOptions
{
    /// <summary>0 = any free port.</summary>
    public int Port { get; init; } = 5433;

    /// <summary>Where it listens: the HTTP endpoint's address (loopback unless told otherwise).</summary>
    public IPAddress Address { get; init; } = IPAddress.Loopback;

    /// <summary>The API keys; null or empty (and not <see cref="KeysRequired"/>) = trust.</summary>
    public ApiKeyStore? Keys { get; init; }

    /// <summary>Logins are checked even with no key (listening beyond loopback without --unsecured): every login fails.</summary>
    public bool KeysRequired { get; init; }

    public FailedLogins? FailedLogins { get; init; }

    /// <summary>Accept passwords in clear text (only when asked for; SCRAM-SHA-256 otherwise).</summary>
    public bool AllowCleartext { get; init; }

    /// <summary>Magpie's TLS certificate (<c>Magpie:Tls</c>): SSLRequest is then answered 'S' and the connection goes over TLS.</summary>
    public X509Certificate2? Certificate { get; init; }

    public int MaxConnections { get; init; } = 64;
    public TimeSpan StatementTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>How long a connection may take to authenticate (PostgreSQL's <c>authentication_timeout</c>): a client that never
    /// finishes its startup gives its slot back instead of holding it forever.</summary>
    public TimeSpan StartupTimeout { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>Connections that have not sent their startup message yet; past this, the oldest is closed for a new one (<see cref="PgAdmission"/>).</summary>
    public int MaxPendingConnections { get; init; } = 128;

    public bool Trusts => Keys is not { Any: true } && !KeysRequired;
}
