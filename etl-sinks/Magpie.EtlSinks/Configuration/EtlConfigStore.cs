using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Contracts.Storage;

namespace Magpie.EtlSinks.Configuration;

/// <summary>Every connection string, ETL task and queue sink, as one versioned snapshot.</summary>
public sealed record EtlConfig(IReadOnlyDictionary<string, EtlConnection> Connections, IReadOnlyDictionary<string, EtlTaskDefinition> Tasks,
    IReadOnlyDictionary<string, QueueSinkDefinition> Sinks)
{
    public static EtlConfig Empty { get; } = new(new Dictionary<string, EtlConnection>(), new Dictionary<string, EtlTaskDefinition>(),
        new Dictionary<string, QueueSinkDefinition>());
}

/// <summary>A change the store refused, with the HTTP status that says why.</summary>
public sealed class EtlConfigException(int status, string message) : Exception(message)
{
    public int Status { get; } = status;
}

/// <summary>
/// Connection strings, tasks and sinks, durable in <c>{dataDir}/etl/config.json</c> (replaced atomically on every
/// change, so a crash keeps the old or the new configuration). <see cref="Changed"/> tells the supervisor.
/// </summary>
public sealed partial class EtlConfigStore
{
    public static readonly JsonSerializerOptions Json = new(Magpie.Contracts.WireJson.Web) { WriteIndented = true };

    private readonly string _path;
    private readonly Lock _lock = new();
    private EtlConfig _config;

    public EtlConfigStore(string dataDir)
    {
        _path = Path.Combine(dataDir, "etl", "config.json");
        _config = File.Exists(_path) ? Read(_path) : EtlConfig.Empty;
    }

    public event Action<EtlConfig>? Changed;

    public EtlConfig Current => Volatile.Read(ref _config);

    public void PutConnection(string name, EtlConnection connection)
    {
        CheckName(name);
        var problems = connection.Problems().ToList();
        if (problems.Count > 0) throw new EtlConfigException(400, string.Join("; ", problems));
        Update(c => c with { Connections = With(c.Connections, name, connection) });
    }

    public void DeleteConnection(string name) => Update(c =>
    {
        if (!c.Connections.ContainsKey(name)) throw new EtlConfigException(404, $"connection '{name}' does not exist");
        var users = c.Tasks.Where(t => t.Value.Connection == name).Select(t => $"task {t.Key}")
            .Concat(c.Sinks.Where(s => s.Value.Connection == name).Select(s => $"sink {s.Key}")).ToList();
        if (users.Count > 0) throw new EtlConfigException(409, $"connection '{name}' is used by {string.Join(", ", users)}; delete or change them first");
        return c with { Connections = Without(c.Connections, name) };
    });

    /// <summary>Validates against the current connections; <paramref name="validateScripts"/> compiles the scripts (400 with line and column).</summary>
    public void PutTask(string name, EtlTaskDefinition task, Action<EtlTaskDefinition, EtlConnection> validateScripts)
    {
        CheckName(name);
        Update(c =>
        {
            var connection = c.Connections.GetValueOrDefault(task.Connection);
            var problems = task.Problems(connection).ToList();
            if (problems.Count > 0) throw new EtlConfigException(400, string.Join("; ", problems));
            validateScripts(task, connection!);
            return c with { Tasks = With(c.Tasks, name, task) };
        });
    }

    public void DeleteTask(string name) => Update(c => c.Tasks.ContainsKey(name)
        ? c with { Tasks = Without(c.Tasks, name) }
        : throw new EtlConfigException(404, $"task '{name}' does not exist"));

    /// <summary>Validates against the current connections; <paramref name="validateScript"/> compiles the script (400 with line and column).</summary>
    public void PutSink(string name, QueueSinkDefinition sink, Action<QueueSinkDefinition> validateScript)
    {
        CheckName(name);
        Update(c =>
        {
            var problems = sink.Problems(name, c.Connections.GetValueOrDefault(sink.Connection)).ToList();
            if (problems.Count > 0) throw new EtlConfigException(400, string.Join("; ", problems));
            validateScript(sink);
            return c with { Sinks = With(c.Sinks, name, sink) };
        });
    }

    public void DeleteSink(string name) => Update(c => c.Sinks.ContainsKey(name)
        ? c with { Sinks = Without(c.Sinks, name) }
        : throw new EtlConfigException(404, $"sink '{name}' does not exist"));

    private void Update(Func<EtlConfig, EtlConfig> change)
    {
        EtlConfig next;
        lock (_lock)
        {
            next = change(_config);
            DurableFile.Write(_path, JsonSerializer.SerializeToUtf8Bytes(new StoredConfig(
                new(next.Connections), new(next.Tasks), new(next.Sinks)), Json), ownerOnly: true);
            Volatile.Write(ref _config, next);
        }
        Changed?.Invoke(next);
    }

    private static EtlConfig Read(string path)
    {
        var stored = JsonSerializer.Deserialize<StoredConfig>(File.ReadAllBytes(path), Json)
            ?? throw new InvalidDataException($"{path} is empty");
        return new EtlConfig(stored.Connections, stored.Tasks, stored.Sinks ?? []);
    }

    private static void CheckName(string name)
    {
        if (!NamePattern().IsMatch(name))
            throw new EtlConfigException(400, $"'{name}' is not a valid name: use 1-100 letters, digits, '.', '_' or '-'");
    }

    private static Dictionary<string, T> With<T>(IReadOnlyDictionary<string, T> d, string key, T value) => new(d) { [key] = value };

    private static Dictionary<string, T> Without<T>(IReadOnlyDictionary<string, T> d, string key)
    {
        var copy = new Dictionary<string, T>(d);
        copy.Remove(key);
        return copy;
    }

    [GeneratedRegex(@"^(?!\.{1,2}$)[A-Za-z0-9._-]{1,100}$")]
    private static partial Regex NamePattern();

    private sealed record StoredConfig(Dictionary<string, EtlConnection> Connections, Dictionary<string, EtlTaskDefinition> Tasks,
        Dictionary<string, QueueSinkDefinition>? Sinks);
}
