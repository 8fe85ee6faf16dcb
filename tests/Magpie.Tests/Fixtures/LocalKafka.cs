using System.Diagnostics;

namespace Magpie.Tests.Fixtures;

/// <summary>A single-node KRaft Kafka broker run from <c>KAFKA_HOME</c>'s jars by this test run, data in a temp dir, stopped by pid.</summary>
public sealed class LocalKafka : IServiceRuntime
{
    private readonly string _dataDir;
    private readonly int _port;
    private Process? _process;

    private LocalKafka(string dataDir, int port) => (_dataDir, _port) = (dataDir, port);

    public string BootstrapServers => $"127.0.0.1:{_port}";

    public static string KafkaHome =>
        Environment.GetEnvironmentVariable("KAFKA_HOME") is { Length: > 0 } home ? home : Path.Combine(RepoPaths.Shared, "kafka");

    /// <param name="scram">A user the broker requires on its client listener (SASL_PLAINTEXT, SCRAM-SHA-256), made at format time.</param>
    /// <param name="advertisedPort">The port the broker tells clients to connect to (a <see cref="TcpProxy"/> in front of it); default its own.</param>
    public static async Task<LocalKafka> StartAsync(int port, (string User, string Password)? scram = null, int? advertisedPort = null)
    {
        if (scram is not null && advertisedPort is not null) throw new ArgumentException("a SCRAM broker advertises its own port");
        var libs = Path.Combine(KafkaHome, "libs");
        if (!Directory.Exists(libs))
            throw new InvalidOperationException($"no Kafka for the tests: set KAFKA_BOOTSTRAP_SERVERS, run a Docker engine, or point KAFKA_HOME at a Kafka distribution (looked in {libs})");
        var dataDir = Directory.CreateTempSubdirectory("magpie-kafka-").FullName;
        var controllerPort = FreePort.Next();
        await File.WriteAllTextAsync(Path.Combine(dataDir, "server.properties"), $"""
            process.roles=broker,controller
            node.id=1
            controller.quorum.voters=1@127.0.0.1:{controllerPort}
            {(scram is { } u ? $"""
            listeners=SASL_PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controllerPort}
            advertised.listeners=SASL_PLAINTEXT://127.0.0.1:{port}
            listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
            inter.broker.listener.name=SASL_PLAINTEXT
            sasl.enabled.mechanisms=SCRAM-SHA-256
            sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256
            listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="{u.User}" password="{u.Password}";
            """ : $"""
            listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controllerPort}
            advertised.listeners=PLAINTEXT://127.0.0.1:{advertisedPort ?? port}
            listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
            """)}
            controller.listener.names=CONTROLLER
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
        var addScram = scram is { } user ? $" --add-scram SCRAM-SHA-256=[name={user.User},password={user.Password}]" : "";
        await RunJavaAsync(libs, $"kafka.tools.StorageTool format -t {clusterId} -c {dataDir}/server.properties{addScram}");
        var broker = new LocalKafka(dataDir, port);
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

    public Task StopAsync()
    {
        if (_process is null || _process.HasExited) return Task.CompletedTask;
        Signals.Send(_process.Id, Signals.SigTerm);
        if (!_process.WaitForExit(30_000)) { _process.Kill(); _process.WaitForExit(); }
        return Task.CompletedTask;
    }

    public Task StartAgainAsync() => StartProcessAsync();

    public async ValueTask DisposeAsync()
    {
        await StopAsync();
        _process?.Dispose();
        try { Directory.Delete(_dataDir, recursive: true); } catch (IOException) { }
    }
}
