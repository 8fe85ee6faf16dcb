using System.Security.Cryptography;
using System.Text;

namespace Magpie.Security;

/// <summary>
/// What a SCRAM-SHA-256 server keeps instead of a password (RFC 5802 §3, as PostgreSQL's pg_authid does): salt,
/// iteration count, StoredKey and ServerKey. Made once when a key is created, so the key itself is never stored.
/// </summary>
public sealed record ScramVerifier(byte[] Salt, int Iterations, byte[] StoredKey, byte[] ServerKey)
{
    public const int DefaultIterations = 4096;

    public static ScramVerifier Create(string password, int iterations = DefaultIterations)
    {
        var salt = RandomNumberGenerator.GetBytes(16);
        var salted = Rfc2898DeriveBytes.Pbkdf2(Encoding.UTF8.GetBytes(password), salt, iterations, HashAlgorithmName.SHA256, 32);
        return new ScramVerifier(salt, iterations, SHA256.HashData(HMACSHA256.HashData(salted, "Client Key"u8)), HMACSHA256.HashData(salted, "Server Key"u8));
    }

    /// <summary>A verifier no password matches: an unknown user goes through the whole exchange, so the answer doesn't say which part was wrong.</summary>
    public static ScramVerifier Nobody() => new(RandomNumberGenerator.GetBytes(16), DefaultIterations, RandomNumberGenerator.GetBytes(32), RandomNumberGenerator.GetBytes(32));
}
