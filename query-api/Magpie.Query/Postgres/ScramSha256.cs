using System.Security.Cryptography;
using System.Text;
using Magpie.Security;

namespace Magpie.Query.Postgres;

/// <summary>
/// The server side of SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL speaks it: the user name comes from the startup
/// message (the SCRAM one is empty), no channel binding is offered. Checked against the key's stored verifier (salt,
/// StoredKey, ServerKey), as PostgreSQL checks pg_authid's: the key itself is never known to the server.
/// </summary>
public sealed class ScramSha256(ScramVerifier verifier)
{
    private string _clientFirstBare = "", _serverFirst = "", _nonce = "";

    /// <summary>client-first-message → server-first-message.</summary>
    public string First(string clientFirst)
    {
        // gs2 header: "n,," (no channel binding) or "y,," (client could, server doesn't offer it).
        if (!(clientFirst.StartsWith("n,", StringComparison.Ordinal) || clientFirst.StartsWith("y,", StringComparison.Ordinal)))
            throw new PgException(PgException.ProtocolViolation, "SCRAM channel binding is not offered by this server", fatal: true);
        _clientFirstBare = clientFirst[(clientFirst.IndexOf(',', 2) + 1)..];
        var clientNonce = Attribute(_clientFirstBare, 'r') ?? throw new PgException(PgException.ProtocolViolation, "SCRAM client nonce missing", fatal: true);
        _nonce = clientNonce + Convert.ToBase64String(RandomNumberGenerator.GetBytes(18));
        _serverFirst = $"r={_nonce},s={Convert.ToBase64String(verifier.Salt)},i={verifier.Iterations}";
        return _serverFirst;
    }

    /// <summary>client-final-message → server-final-message, or null when the proof is wrong.</summary>
    public string? Final(string clientFinal)
    {
        var proofAt = clientFinal.LastIndexOf(",p=", StringComparison.Ordinal);
        if (proofAt < 0 || Attribute(clientFinal, 'r') != _nonce) return null;
        var withoutProof = clientFinal[..proofAt];
        byte[] proof;
        try { proof = Convert.FromBase64String(clientFinal[(proofAt + 3)..]); }
        catch (FormatException) { return null; }

        var storedKey = verifier.StoredKey;
        var authMessage = Encoding.UTF8.GetBytes($"{_clientFirstBare},{_serverFirst},{withoutProof}");
        var signature = HMACSHA256.HashData(storedKey, authMessage);
        if (proof.Length != signature.Length) return null;
        var recovered = new byte[proof.Length];
        for (var i = 0; i < proof.Length; i++) recovered[i] = (byte)(proof[i] ^ signature[i]);
        if (!CryptographicOperations.FixedTimeEquals(SHA256.HashData(recovered), storedKey)) return null;
        return "v=" + Convert.ToBase64String(HMACSHA256.HashData(verifier.ServerKey, authMessage));
    }

    private static string? Attribute(string message, char name)
    {
        foreach (var part in message.Split(','))
            if (part.Length > 1 && part[0] == name && part[1] == '=') return part[2..];
        return null;
    }
}
