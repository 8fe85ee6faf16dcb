using Magpie.Contracts;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using System.Text.Json.Serialization;
using Magpie.Contracts.Storage;

namespace Magpie.Security;

/// <summary>One API key as stored: never the key itself, only its SHA-256 (HTTP) and a SCRAM verifier (PostgreSQL).</summary>
public sealed record ApiKey(string Name, Role Role, DateTimeOffset Created, string Sha256, ScramVerifier Scram);

/// <summary>
/// The API keys of a deployment, in one owner-only JSON file (<c>{data dir}/keys.json</c>, or <c>Magpie:KeysFile</c> shared by
/// the processes of a split deployment). Keys are 256 random bits, so a plain SHA-256 is enough to store them (a slow hash
/// protects guessable passwords; these are not). The file is re-read when it changes, so <c>magpie keys create</c> on a running
/// deployment takes effect within a second.
/// </summary>
public sealed class ApiKeyStore
{
    public const string KeyPrefix = "mgp_";
    private const int MaxNameLength = 63;   // PostgreSQL's NAMEDATALEN - 1: a key's name is its PostgreSQL user name
    private static readonly JsonSerializerOptions Json = new()
    {
        PropertyNamingPolicy = JsonNamingPolicy.CamelCase,
        WriteIndented = true,
        Converters = { new JsonStringEnumConverter(JsonNamingPolicy.CamelCase) },
    };

    private readonly string _path;
    private readonly Lock _lock = new();
    private Loaded _loaded = new([], [], DateTime.MinValue, 0);
    private long _checkedAt;

    public ApiKeyStore(string path)
    {
        _path = Path.GetFullPath(path);
        Reload();
    }

    public static string DefaultPath(string dataDir) => Path.Combine(dataDir, "keys.json");

    public string FilePath => _path;

    /// <summary>Whether any key exists: none means authentication is off (and Magpie listens on loopback only).</summary>
    public bool Any => Current.ByName.Count > 0;

    public IReadOnlyCollection<ApiKey> All => Current.ByName.Values;

    public ApiKey? Find(string name) => Current.ByName.GetValueOrDefault(name);

    /// <summary>The key whose secret this is, or null.</summary>
    public ApiKey? Authenticate(string secret)
    {
        if (secret.Length is 0 or > 256) return null;
        // A lookup by the hash reveals nothing useful: guessing a 256-bit key's SHA-256 prefix by timing gets no nearer the key.
        return Current.ByHash.GetValueOrDefault(Hash(secret));
    }

    /// <summary>Creates a key and returns its secret: the only time it is ever shown.</summary>
    public (ApiKey Key, string Secret) Create(string name, Role role)
    {
        if (ProblemWithName(name) is { } problem) throw new ArgumentException(problem);
        var secret = KeyPrefix + Base64Url(RandomNumberGenerator.GetBytes(32));
        var key = new ApiKey(name, role, DateTimeOffset.UtcNow, Hash(secret), ScramVerifier.Create(secret));
        Change(keys =>
        {
            if (keys.ContainsKey(name)) throw new InvalidOperationException($"a key named '{name}' exists: delete it first, or pick another name");
            keys[name] = key;
        });
        return (key, secret);
    }

    public bool Delete(string name)
    {
        var deleted = false;
        Change(keys => deleted = keys.Remove(name));
        return deleted;
    }

    public static string? ProblemWithName(string name) =>
        name.Length is 0 or > MaxNameLength || name is "." or ".." || !name.All(c => char.IsAsciiLetterOrDigit(c) || c is '-' or '_' or '.')
            ? $"a key name is 1 to {MaxNameLength} letters, digits, '-', '_' or '.', not '.' or '..' (it is also the PostgreSQL user name), not '{(name.Length > MaxNameLength ? name[..MaxNameLength] + "…" : name)}'"
            : null;

    private Loaded Current
    {
        get
        {
            // One stat a second at most: another process (`magpie keys create`) may have changed the file.
            var now = Environment.TickCount64;
            if (now - Interlocked.Read(ref _checkedAt) > 1000)
            {
                Interlocked.Exchange(ref _checkedAt, now);
                var info = new FileInfo(_path);
                var stamp = info.Exists ? info.LastWriteTimeUtc : DateTime.MinValue;
                var length = info.Exists ? info.Length : 0;
                if (stamp != _loaded.Stamp || length != _loaded.Length) Reload();
            }
            return _loaded;
        }
    }

    private void Reload()
    {
        lock (_lock) _loaded = Read();
    }

    private Loaded Read()
    {
        var info = new FileInfo(_path);
        if (!info.Exists) return new Loaded([], [], DateTime.MinValue, 0);
        StoredKeys? stored;
        try { stored = JsonSerializer.Deserialize<StoredKeys>(File.ReadAllBytes(_path), Json); }
        catch (JsonException e) { throw new InvalidDataException($"the key file {_path} is not valid: {e.Message}", e); }
        var keys = stored?.Keys ?? [];
        return new Loaded(keys.ToDictionary(k => k.Name, StringComparer.Ordinal), keys.ToDictionary(k => k.Sha256, StringComparer.Ordinal), info.LastWriteTimeUtc, info.Length);
    }

    private void Change(Action<Dictionary<string, ApiKey>> change)
    {
        lock (_lock)
        {
            // A lock file keeps two processes (a running server, `magpie keys create`) from writing over each other's change.
            using var fileLock = AcquireFileLock();
            var keys = new Dictionary<string, ApiKey>(Read().ByName, StringComparer.Ordinal);
            change(keys);
            DurableFile.Write(_path, JsonSerializer.SerializeToUtf8Bytes(new StoredKeys([.. keys.Values.OrderBy(k => k.Name, StringComparer.Ordinal)]), Json), ownerOnly: true);
            _loaded = Read();
        }
    }

    private FileStream AcquireFileLock()
    {
        Directory.CreateDirectory(Path.GetDirectoryName(_path)!);
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (true)
        {
            try { return new FileStream(_path + ".lock", FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None, 1, FileOptions.DeleteOnClose); }
            catch (IOException) when (DateTime.UtcNow < deadline) { Waits.Pause(TimeSpan.FromMilliseconds(50), CancellationToken.None); }
        }
    }

    private static string Hash(string secret) => Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(secret)));

    private static string Base64Url(byte[] bytes) => Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');

    private sealed record StoredKeys(List<ApiKey> Keys);

    private sealed record Loaded(Dictionary<string, ApiKey> ByName, Dictionary<string, ApiKey> ByHash, DateTime Stamp, long Length);
}
