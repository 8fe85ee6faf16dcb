using System.Diagnostics;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A real Kafka broker for tests, picked in this order: <c>KAFKA_BOOTSTRAP_SERVERS</c> from the
/// environment; a container when a Docker engine answers; else a local single-node KRaft broker started
/// from <c>KAFKA_HOME</c> (default <c>../shared/kafka</c>) in a temp dir, stopped by pid on dispose.
/// </summary>
public sealed class KafkaBroker : IAsyncDisposable
{
    private readonly string? _dataDir;
    private readonly string? _container;
    private readonly int _port, _controllerPort;
    private Process? _process;

    public string BootstrapServers { get; }

    private KafkaBroker(string bootstrap, string? dataDir = null, string? container = null, int port = 0, int controllerPort = 0)
    {
        BootstrapServers = bootstrap;
        _dataDir = dataDir;
        _container = container;
        _port = port;
        _controllerPort = controllerPort;
    }

    /// <summary>The environment's broker if there is one, else one of our own.</summary>
    public static async Task<KafkaBroker> StartAsync()
    {
        if (Environment.GetEnvironmentVariable("KAFKA_BOOTSTRAP_SERVERS") is { Length: > 0 } servers) return new KafkaBroker(servers);
        return await StartOwnedAsync();
    }

    /// <summary>A broker this test run controls (needed to stop and restart it).</summary>
    public static async Task<KafkaBroker> StartOwnedAsync()
    {
        if (await DockerCli.EngineAnswersAsync()) return await StartContainerAsync();
        return await StartLocalAsync();
    }

    public static string KafkaHome =>
        Environment.GetEnvironmentVariable("KAFKA_HOME") is { Length: > 0 } home ? home : Path.Combine(RepoPaths.Shared, "kafka");

    private static async Task<KafkaBroker> StartLocalAsync()
    {
        var libs = Path.Combine(KafkaHome, "libs");
        if (!Directory.Exists(libs))
            throw new InvalidOperationException($"no Kafka for the tests: set KAFKA_BOOTSTRAP_SERVERS, run a Docker engine, or point KAFKA_HOME at a Kafka distribution (looked in {libs})");
        var dataDir = Directory.CreateTempSubdirectory("magpie-kafka-").FullName;
        var port = FreePort.Next();
        var controllerPort = FreePort.Next();
        await File.WriteAllTextAsync(Path.Combine(dataDir, "server.properties"), $"""
            process.roles=broker,controller
            node.id=1
            controller.quorum.voters=1@127.0.0.1:{controllerPort}
            listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controllerPort}
            advertised.listeners=PLAINTEXT://127.0.0.1:{port}
            controller.listener.names=CONTROLLER
            listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
            log.dirs={dataDir}/logs
            num.partitions=3
            offsets.topic.replication.factor=1
            offsets.topic.num.partitions=3
            transaction.state.log.replication.factor=1
            transaction.state.log.min.isr=1
            group.initial.rebalance.delay.ms=0
            log.cleaner.enable=true
            """);
        await File.WriteAllTextAsync(Path.Combine(dataDir, "log4j.properties"), """
            log4j.rootLogger=WARN, stdout
            log4j.appender.stdout=org.apache.log4j.ConsoleAppender
            log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
            log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
            """);
        var clusterId = (await RunJavaAsync(libs, "kafka.tools.StorageTool random-uuid")).Trim();
        await RunJavaAsync(libs, $"kafka.tools.StorageTool format -t {clusterId} -c {dataDir}/server.properties");
        var broker = new KafkaBroker($"127.0.0.1:{port}", dataDir, port: port, controllerPort: controllerPort);
        await broker.StartProcessAsync();
        return broker;
    }

    private async Task StartProcessAsync()
    {
        var libs = Path.Combine(KafkaHome, "libs");
        var psi = new ProcessStartInfo("java")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var a in new[] { "-Xmx512m", $"-Dlog4j.configuration=file:{_dataDir}/log4j.properties", "-cp", $"{libs}/*", "kafka.Kafka", $"{_dataDir}/server.properties" })
            psi.ArgumentList.Add(a);
        _process = Process.Start(psi)!;
        _process.OutputDataReceived += (_, _) => { };
        _process.ErrorDataReceived += (_, _) => { };
        _process.BeginOutputReadLine();
        _process.BeginErrorReadLine();
        await FreePort.WaitOpenAsync(_port, TimeSpan.FromSeconds(60), () => !_process.HasExited);
    }

    private static async Task<string> RunJavaAsync(string libs, string args)
    {
        var psi = new ProcessStartInfo("java", $"-cp \"{libs}/*\" {args}") { RedirectStandardOutput = true, RedirectStandardError = true };
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        await p.WaitForExitAsync();
        if (p.ExitCode != 0) throw new InvalidOperationException($"java {args} failed: {await stderr}");
        return await stdout;
    }

    /// <summary>Stops the broker as an operator would (SIGTERM / docker stop) and waits until it is gone.</summary>
    public async Task StopAsync()
    {
        if (_container is not null) { await DockerCli.RunAsync($"stop {_container}"); return; }
        if (_process is null || _process.HasExited) return;
        Signals.Send(_process.Id, Signals.SigTerm);
        if (!_process.WaitForExit(30_000)) { _process.Kill(); _process.WaitForExit(); }
    }

    public async Task RestartAsync()
    {
        if (_container is not null)
        {
            await DockerCli.RunAsync($"start {_container}");
            await FreePort.WaitOpenAsync(_port, TimeSpan.FromSeconds(60));
            return;
        }
        if (_dataDir is null) throw new InvalidOperationException("this broker belongs to the environment; it can't be restarted");
        await StartProcessAsync();
    }

    public async ValueTask DisposeAsync()
    {
        if (_container is not null) { await DockerCli.RunAsync($"rm -f {_container}"); return; }
        await StopAsync();
        _process?.Dispose();
        if (_dataDir is not null) try { Directory.Delete(_dataDir, recursive: true); } catch (IOException) { }
    }

    // ---- Docker engine path ----

    private static async Task<KafkaBroker> StartContainerAsync()
    {
        var port = FreePort.Next();
        var name = $"magpie-test-kafka-{Guid.NewGuid():N}"[..30];
        await DockerCli.RunAsync($"run -d --name {name} -p 127.0.0.1:{port}:{port} " +
            "-e KAFKA_NODE_ID=1 -e KAFKA_PROCESS_ROLES=broker,controller " +
            $"-e KAFKA_LISTENERS=PLAINTEXT://:{port},CONTROLLER://:9093 -e KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:{port} " +
            "-e KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER -e KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT " +
            "-e KAFKA_CONTROLLER_QUORUM_VOTERS=1@localhost:9093 -e KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1 " +
            "-e KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1 -e KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1 " +
            "-e KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0 apache/kafka:3.9.1");
        await FreePort.WaitOpenAsync(port, TimeSpan.FromSeconds(90));
        return new KafkaBroker($"127.0.0.1:{port}", container: name, port: port);
    }
}
