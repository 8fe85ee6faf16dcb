using System.Globalization;
using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Npgsql;

namespace Magpie.Tests.Postgres.Grafana;

/// <summary>
/// 20,000 metric documents as a Grafana user's service writes them — eight hosts in mixed case, regions and statuses that
/// are sometimes missing and sometimes an explicit null, CPU in quarter steps, timestamps 13 s apart with and without a
/// fraction of a second — in Magpie (index <c>metrics</c>) and in a real PostgreSQL (table <c>metrics</c>, the columns Magpie
/// reports, the missing values NULL), both reached as user grafana, database magpie.
/// </summary>
public sealed class PgMetricsFixture : IAsyncLifetime
{
    public const int Count = 20_000;
    public static readonly DateTime Start = new(2026, 11, 1, 0, 0, 0, DateTimeKind.Utc);
    public static readonly string[] Hosts = ["web-01", "web-02", "Web-03", "db-1", "DB-2", "cache-a", "cache-B", "api"];

    public MagpieProcess Magpie { get; private set; } = null!;
    public PostgresServer Reference { get; private set; } = null!;
    public NpgsqlDataSource MagpieSql { get; private set; } = null!;
    public NpgsqlDataSource ReferenceSql { get; private set; } = null!;

    /// <summary>The documents: each a JSON object, a field left out where it is missing.</summary>
    public static IReadOnlyList<Dictionary<string, object?>> Documents { get; } = Generate();

    private static List<Dictionary<string, object?>> Generate()
    {
        var random = new Random(58);
        var docs = new List<Dictionary<string, object?>>(Count);
        string[] fractions = ["", ".5", ".123", ".05", ".999"];
        for (var i = 0; i < Count; i++)
        {
            var at = Start.AddSeconds(i * 13);
            var fraction = fractions[i % fractions.Length];
            var doc = new Dictionary<string, object?>
            {
                ["time"] = at.ToString("yyyy-MM-dd'T'HH:mm:ss", CultureInfo.InvariantCulture) + fraction + "Z",
                ["epoch"] = (double)(long)(at - DateTime.UnixEpoch).TotalSeconds,
                ["host"] = Hosts[random.Next(Hosts.Length)],
                ["cpu"] = random.Next(0, 401) / 4.0,
                ["mem"] = (double)random.Next(0, 16385),
            };
            switch (random.Next(9)) { case 0: break; case 1: doc["status"] = null; break; default: doc["status"] = new[] { "ok", "OK", "error", "warn", "ok", "ok" }[random.Next(6)]; break; }
            switch (random.Next(8)) { case 0: break; case 1: doc["region"] = null; break; default: doc["region"] = new[] { "eu", "us", "EU", "ap" }[random.Next(4)]; break; }
            if (random.Next(10) != 0) doc["requests"] = (double)random.Next(0, 1001);
            if (random.Next(4) == 0) doc["note"] = new[] { "disk timeout", "Timeout on db", "it's fine", "restart", "" }[random.Next(5)];
            docs.Add(doc);
        }
        return docs;
    }

    public const string Index = """
        { "maps": ["map('Metrics', m => ({ time: m.time, epoch: m.epoch, host: m.host, status: m.status, region: m.region, cpu: m.cpu, mem: m.mem, requests: m.requests, note: m.note }))"] }
        """;

    public async Task InitializeAsync()
    {
        Magpie = await MagpieProcess.StartAsync();
        for (var batch = 0; batch < Count; batch += 1000)
        {
            var commands = Documents.Skip(batch).Take(1000).Select((d, k) => new
            {
                method = "PUT", id = $"metrics/{batch + k + 1}",
                document = d.Append(new("@metadata", new Dictionary<string, string> { ["@collection"] = "Metrics" })).ToDictionary(),
            });
            var post = await Magpie.Http.PostAsync("bulk_docs", HttpJson.Json(JsonSerializer.Serialize(commands)));
            if (!post.IsSuccessStatusCode) throw new InvalidOperationException(await post.Content.ReadAsStringAsync());
        }
        var put = await Magpie.Http.PutAsync("indexes/metrics", HttpJson.Json(Index));
        if (put.StatusCode != HttpStatusCode.NoContent) throw new InvalidOperationException(await put.Content.ReadAsStringAsync());
        var wait = await Magpie.Http.PostAsJsonAsync("queries", new { query = "from index 'metrics'", pageSize = 1, waitForNonStaleResults = true, timeoutMs = 120_000 });
        if (!wait.IsSuccessStatusCode) throw new InvalidOperationException(await wait.Content.ReadAsStringAsync());
        MagpieSql = NpgsqlDataSource.Create($"Host=127.0.0.1;Port={Magpie.PgPort};Username=grafana;Database=magpie;Timeout=30;Command Timeout=60");

        // The reference: the columns in the order and with the types Magpie reports for them.
        var columns = new List<(string Name, string Type)>();
        await using (var cmd = MagpieSql.CreateCommand("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'metrics' ORDER BY ordinal_position"))
        await using (var reader = await cmd.ExecuteReaderAsync())
            while (await reader.ReadAsync()) columns.Add((reader.GetString(0), reader.GetString(1)));
        Assert.Equal(["cpu", "epoch", "host", "mem", "note", "region", "requests", "status", "time"], columns.Select(c => c.Name));
        Reference = await PostgresServer.StartAsync();
        await using (var admin = new NpgsqlConnection(Reference.ConnectionString))
        {
            await admin.OpenAsync();
            foreach (var sql in (string[])["CREATE ROLE grafana LOGIN", "CREATE DATABASE magpie OWNER grafana"])
                await new NpgsqlCommand(sql, admin).ExecuteNonQueryAsync();
        }
        ReferenceSql = NpgsqlDataSource.Create($"{Reference.ConnectionStringAs("grafana", "magpie")};Timeout=30;Command Timeout=60");
        await using (var create = ReferenceSql.CreateCommand($"CREATE TABLE metrics ({string.Join(", ", columns.Select(c => $"\"{c.Name}\" {c.Type}"))})"))
            await create.ExecuteNonQueryAsync();
        var copy = new StringBuilder();
        foreach (var d in Documents)
            copy.AppendLine(string.Join('\t', columns.Select(c => d.GetValueOrDefault(c.Name) switch
            {
                null => "\\N",
                double v => v.ToString("R", CultureInfo.InvariantCulture),
                var v => ((string)v).Replace("\\", "\\\\").Replace("\t", "\\t"),
            })));
        await using (var connection = await ReferenceSql.OpenConnectionAsync())
        await using (var writer = await connection.BeginTextImportAsync($"COPY metrics ({string.Join(", ", columns.Select(c => $"\"{c.Name}\""))}) FROM STDIN"))
            await writer.WriteAsync(copy.ToString());
    }

    public async Task DisposeAsync()
    {
        await MagpieSql.DisposeAsync();
        await ReferenceSql.DisposeAsync();
        await Reference.DisposeAsync();
        await Magpie.DisposeAsync();
    }
}
