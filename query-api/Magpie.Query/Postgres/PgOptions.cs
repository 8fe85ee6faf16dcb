namespace Magpie.Query.Postgres;

/// <summary>
/// The PostgreSQL wire endpoint (<c>--pg-port</c>, <c>--pg-user name:password</c>, or <c>Magpie:Pg*</c> settings). With no
/// user configured it listens on loopback only and trusts every connection, as a fresh PostgreSQL's local <c>trust</c> does.
/// </summary>
public sealed record PgOptions
{
    /// <summary>0 turns the endpoint off.</summary>
    public int Port { get; init; } = 5433;

    /// <summary>name → password; empty = trust, loopback only.</summary>
    public IReadOnlyDictionary<string, string> Users { get; init; } = new Dictionary<string, string>();

    /// <summary>Accept passwords in clear text (only when asked for; SCRAM-SHA-256 otherwise).</summary>
    public bool AllowCleartext { get; init; }

    /// <summary>A PKCS#12 certificate (and its password): SSLRequest is then answered 'S' and the connection goes over TLS.</summary>
    public string? CertificatePath { get; init; }
    public string? CertificatePassword { get; init; }

    public int MaxConnections { get; init; } = 64;
    public TimeSpan StatementTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>How long a connection may take to authenticate (PostgreSQL's <c>authentication_timeout</c>): a client that never
    /// finishes its startup gives its slot back instead of holding it forever.</summary>
    public TimeSpan StartupTimeout { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>Parses <c>name:password</c> entries (the password may contain ':').</summary>
    public static Dictionary<string, string> ParseUsers(IEnumerable<string> entries)
    {
        var users = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var e in entries.Where(e => !string.IsNullOrWhiteSpace(e)))
        {
            var colon = e.IndexOf(':');
            if (colon <= 0) throw new ArgumentException($"a PostgreSQL user is name:password, not '{e}'");
            users[e[..colon]] = e[(colon + 1)..];
        }
        return users;
    }
}
