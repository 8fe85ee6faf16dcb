using System.CommandLine;
using Magpie.Hosting;
using Magpie.Modules;

namespace Magpie.Commands;

/// <summary>`magpie run`: start the modules of a target. Options override appsettings.json and MAGPIE__* variables.</summary>
public static class RunCommand
{
    public static Command Create()
    {
        var target = new Option<string?>("--target", "-t") { Description = "Modules to run: all (default), ingest, indexer, query, sinks, or modules with ingest joined by commas (ingest,sinks)" };
        target.Validators.Add(result =>
        {
            if (result.GetValueOrDefault<string?>() is not { } value) return;
            try { ModuleGraph.Parse(value); }
            catch (ArgumentException e) { result.AddError(e.Message); }
        });
        var listTargets = new Option<bool>("--list-targets") { Description = "Print each target with the modules it runs, and each module with what it needs, then exit" };
        var dataDir = new Option<string?>("--data-dir") { Description = "Data directory (default ./data)" };
        var httpPort = new Option<int?>("--http-port") { Description = "HTTP port (default 8080)" };
        var kafka = new Option<string?>("--kafka") { Description = "Kafka bootstrap servers; absent = embedded, no Kafka" };

        var pgPort = new Option<int?>("--pg-port") { Description = "PostgreSQL wire port of the query target (default 5433; 0 = any free port; -1 = off)" };
        var bind = new Option<string?>("--bind") { Description = "Address to listen on: localhost (default), an IP, or * (needs an API key, or --unsecured)" };
        var unsecured = new Option<bool>("--unsecured") { Description = "Listen beyond loopback with no API key: anyone who reaches the port may do anything" };
        var partitioned = new Option<bool>("--partitioned") { Description = "Target ingest with Kafka: a store partitioned across the ingest processes of the consumer group (Magpie:PartitionedStore)" };

        var command = new Command("run", "Run Magpie (embedded by default)") { target, dataDir, httpPort, kafka, pgPort, bind, unsecured, partitioned, listTargets };
        command.SetAction(async (parse, ct) =>
        {
            if (parse.GetValue(listTargets))
            {
                foreach (var line in ModuleGraph.Describe()) Console.WriteLine(line);
                return 0;
            }
            var builder = MagpieHost.CreateBuilder();
            var settings = MagpieHost.ReadSettings(builder);
            if (parse.GetValue(target) is { } t) settings.Target = t;
            if (parse.GetValue(dataDir) is { } d) settings.DataDir = d;
            if (parse.GetValue(httpPort) is { } p) settings.HttpPort = p;
            if (parse.GetValue(kafka) is { } k) settings.Kafka = k;
            if (parse.GetValue(pgPort) is { } pg) settings.Pg.Port = pg;
            if (parse.GetValue(bind) is { } b) settings.BindAddress = b;
            if (parse.GetValue(unsecured)) settings.Unsecured = true;
            if (parse.GetValue(partitioned)) settings.PartitionedStore = true;
            try
            {
                var app = MagpieHost.Build(builder, settings);
                await app.RunAsync(ct);
            }
            catch (Exception e) when (e is ModuleUnmetException or Ingest.Documents.StoreUnavailableException)
            {
                // Settings or a data directory the operator must fix: one line, no stack trace, a failing exit code.
                Console.Error.WriteLine($"magpie: {e.Message}");
                return 1;
            }
            catch (IOException e) when (e.InnerException is Microsoft.AspNetCore.Connections.AddressInUseException
                or System.Net.Sockets.SocketException { SocketErrorCode: System.Net.Sockets.SocketError.AddressAlreadyInUse or System.Net.Sockets.SocketError.AccessDenied or System.Net.Sockets.SocketError.AddressNotAvailable })
            {
                // A port in use, HTTP (Kestrel's bind) or PostgreSQL: one line, as for settings.
                Console.Error.WriteLine($"magpie: {e.Message}");
                return 1;
            }
            catch (Confluent.Kafka.KafkaException e)
            {
                // A module that needs Kafka at start (the indexer's definitions) found it unreachable or refusing the credentials.
                Console.Error.WriteLine($"magpie: Kafka at {settings.Kafka} did not answer at start: {e.Error.Reason} " +
                    "(check --kafka and the Magpie:KafkaClient settings; librdkafka's lines above say more)");
                return 1;
            }
            return 0;
        });
        return command;
    }
}
