using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Magpie.Contracts.Storage;

namespace Magpie.Query.Subscriptions;

/// <summary>
/// Embedded subscriptions: each one a small file under <c>{dataDir}/subscriptions</c> (definition and acknowledged position,
/// replaced atomically on every change), so a restart — kill -9 included — resumes from the last ack. The lease and the batch
/// handed out live in memory: after a restart the batch is read again and an ack of the old one answers 410.
/// </summary>
public sealed class FileSubscriptionStates : ISubscriptionStates
{
    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web);
    private readonly string _directory;
    private readonly Lock _lock = new();
    private readonly Dictionary<string, SharedSubscription> _states = new(StringComparer.Ordinal);

    public FileSubscriptionStates(string dataDir)
    {
        _directory = Path.Combine(dataDir, "subscriptions");
        if (!Directory.Exists(_directory)) return;
        foreach (var file in Directory.GetFiles(_directory, "*.json"))
        {
            var state = JsonSerializer.Deserialize<SubscriptionState>(File.ReadAllBytes(file), Json)!;
            _states[state.Definition.Name] = new SharedSubscription(state, null, default, null, 1);
        }
    }

    public SharedSubscription? Current(string name) { lock (_lock) return _states.GetValueOrDefault(name); }

    public IReadOnlyCollection<string> Names { get { lock (_lock) return [.. _states.Keys]; } }

    public Task<bool> ReplaceAsync(string name, SharedSubscription? expected, SharedSubscription? next, CancellationToken ct)
    {
        lock (_lock)
        {
            if (!ReferenceEquals(_states.GetValueOrDefault(name), expected)) return Task.FromResult(false);
            if (next is null)
            {
                _states.Remove(name);
                File.Delete(FileOf(name));
                return Task.FromResult(true);
            }
            // Only the position and definition are durable; lease and batch changes touch memory alone.
            if (expected is null || !ReferenceEquals(expected.State, next.State))
                DurableFile.Write(FileOf(name), JsonSerializer.SerializeToUtf8Bytes(next.State, Json));
            _states[name] = next with { Version = (expected?.Version ?? 0) + 1 };
            return Task.FromResult(true);
        }
    }

    private string FileOf(string name) =>
        Path.Combine(_directory, name + "-" + Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(name)))[..8].ToLowerInvariant() + ".json");
}
