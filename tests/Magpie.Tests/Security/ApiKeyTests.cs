using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Postgres;
using Npgsql;

namespace Magpie.Tests.Security;

/// <summary>
/// API keys with roles over real HTTP and the PostgreSQL wire: each role allowed and refused on each endpoint group, keys
/// made by `magpie keys create` and by POST /keys, stored hashed in an owner-only file, failed logins slowed and logged
/// without the key, and the same keys as PostgreSQL users.
/// </summary>
public sealed class ApiKeyTests
{
    private sealed record Case(HttpMethod Method, string Path, string? Body, string Needs);

    // One request per endpoint group, and the least role it needs.
    private static readonly Case[] Cases =
    [
        new(HttpMethod.Get, "docs/users/1", null, "read"),
        new(HttpMethod.Head, "docs/users/1", null, "read"),
        new(HttpMethod.Get, "docs?collection=users", null, "read"),
        new(HttpMethod.Get, "stats", null, "read"),
        new(HttpMethod.Post, "queries", """{"query":"from users"}""", "read"),
        new(HttpMethod.Post, "streams/queries", """{"query":"from users"}""", "read"),
        new(HttpMethod.Get, "indexes", null, "read"),
        new(HttpMethod.Get, "subscriptions", null, "read"),
        new(HttpMethod.Put, "docs/users/2", """{"Name":"Bo"}""", "write"),
        new(HttpMethod.Patch, "docs/users/1", """[{"op":"add","path":"/x","value":1}]""", "write"),
        new(HttpMethod.Post, "bulk_docs", """[{"method":"PUT","id":"users/3","document":{}}]""", "write"),
        new(HttpMethod.Delete, "docs/users/3", null, "write"),
        // A subscription holds back compaction: making and dropping one is a write; reading one is a read.
        new(HttpMethod.Post, "subscriptions", """{"name":"s1","query":"from users"}""", "write"),
        new(HttpMethod.Get, "subscriptions/s1/next?worker=w&waitMs=1", null, "read"),
        new(HttpMethod.Delete, "subscriptions/s1", null, "write"),
        new(HttpMethod.Put, "indexes/Users/ByName", """{"maps":["map(\"users\", u => ({ Name: u.Name }))"]}""", "admin"),
        new(HttpMethod.Post, "indexes/Users/ByName/reset", null, "admin"),
        new(HttpMethod.Get, "etl/connections", null, "admin"),
        new(HttpMethod.Get, "embeddings/connections", null, "admin"),
        new(HttpMethod.Get, "etl/tasks", null, "admin"),
        new(HttpMethod.Get, "keys", null, "admin"),
    ];

    private static readonly string[] Ranks = ["read", "write", "admin"];

    [Fact]
    public async Task Each_role_is_allowed_and_refused_on_each_endpoint_group()
    {
        var dataDir = Directory.CreateTempSubdirectory("magpie-keys-").FullName;
        var keys = new Dictionary<string, string>();
        foreach (var role in Ranks) keys[role] = await TestKeys.CreateAsync(dataDir, role, $"{role}er");
        await using var magpie = await MagpieProcess.StartAsync(dataDir: dataDir);
        using var http = new HttpClient { BaseAddress = magpie.BaseUrl };
        var seed = Send(HttpMethod.Put, "docs/users/1", """{"Name":"Ada"}""", keys["write"]);
        Assert.Equal(HttpStatusCode.Created, (await http.SendAsync(seed)).StatusCode);

        // Health and metrics need no key (probes and Prometheus carry none, and show no data).
        foreach (var open in new[] { "health", "healthz", "readyz", "metrics" })
            Assert.Equal(HttpStatusCode.OK, (await http.GetAsync(open)).StatusCode);

        foreach (var c in Cases)
        {
            var anonymous = await http.SendAsync(Send(c.Method, c.Path, c.Body, null));
            Assert.True(anonymous.StatusCode == HttpStatusCode.Unauthorized, $"{c.Method} {c.Path} without a key: {(int)anonymous.StatusCode}");
            Assert.Contains(anonymous.Headers.WwwAuthenticate, h => h.Scheme == "Bearer");
            if (c.Method != HttpMethod.Head) await HttpJson.AssertProblem(anonymous, HttpStatusCode.Unauthorized, c.Needs);
            foreach (var role in Ranks)
            {
                var allowed = Array.IndexOf(Ranks, role) >= Array.IndexOf(Ranks, c.Needs);
                var response = await http.SendAsync(Send(c.Method, c.Path, c.Body, keys[role], viaHeader: role == "write"));
                var text = await response.Content.ReadAsStringAsync();
                if (allowed)
                    Assert.True(response.StatusCode is not (HttpStatusCode.Unauthorized or HttpStatusCode.Forbidden) && (int)response.StatusCode < 500,
                        $"{role} on {c.Method} {c.Path}: {(int)response.StatusCode} {text}");
                else if (c.Method == HttpMethod.Head) Assert.Equal(HttpStatusCode.Forbidden, response.StatusCode);
                else
                {
                    var problem = await HttpJson.AssertProblem(response, HttpStatusCode.Forbidden, $"needs {c.Needs}");
                    Assert.Contains($"'{role}er' has the {role} role", problem.GetProperty("detail").GetString());
                }
            }
        }

        // An admin makes a key over HTTP: shown once, usable at once, revoked by DELETE.
        var made = await http.SendAsync(Send(HttpMethod.Post, "keys", """{"name":"dashboards","role":"read"}""", keys["admin"]));
        Assert.Equal(HttpStatusCode.Created, made.StatusCode);
        var secret = (await made.JsonAsync()).GetProperty("key").GetString()!;
        Assert.StartsWith("mgp_", secret);
        Assert.Equal(HttpStatusCode.OK, (await http.SendAsync(Send(HttpMethod.Get, "docs/users/1", null, secret))).StatusCode);
        var listed = await (await http.SendAsync(Send(HttpMethod.Get, "keys", null, keys["admin"]))).Content.ReadAsStringAsync();
        Assert.Contains("\"dashboards\"", listed);
        Assert.DoesNotContain(secret, listed);
        await HttpJson.AssertProblem(await http.SendAsync(Send(HttpMethod.Post, "keys", """{"name":"dashboards","role":"read"}""", keys["admin"])), HttpStatusCode.Conflict, "exists");
        await HttpJson.AssertProblem(await http.SendAsync(Send(HttpMethod.Post, "keys", """{"name":"x y","role":"read"}""", keys["admin"])), HttpStatusCode.BadRequest, "key name");
        await HttpJson.AssertProblem(await http.SendAsync(Send(HttpMethod.Post, "keys", """{"name":"z","role":"root"}""", keys["admin"])), HttpStatusCode.BadRequest, "unknown role");
        Assert.Equal(HttpStatusCode.NoContent, (await http.SendAsync(Send(HttpMethod.Delete, "keys/dashboards", null, keys["admin"]))).StatusCode);
        await HttpJson.AssertProblem(await http.SendAsync(Send(HttpMethod.Get, "docs/users/1", null, secret)), HttpStatusCode.Unauthorized, "matches no key");

        // `magpie keys create` on the running deployment's data directory takes effect within a second or so.
        var late = await TestKeys.CreateAsync(dataDir, "read", "late");
        await Eventually(async () => (await http.SendAsync(Send(HttpMethod.Get, "docs/users/1", null, late))).StatusCode == HttpStatusCode.OK);

        // Stored hashed, owner-only; no key in the file, the CLI's list, or the log.
        var file = Path.Combine(dataDir, "keys.json");
        if (!OperatingSystem.IsWindows())   // DurableFile sets Unix modes only where there are any
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(file));
        var stored = await File.ReadAllTextAsync(file);
        var (_, list) = await MagpieCli.RunAsync(TimeSpan.FromSeconds(60), "keys", "list", "--data-dir", dataDir);
        foreach (var key in keys.Values.Append(secret).Append(late))
        {
            Assert.DoesNotContain(key, stored);
            Assert.DoesNotContain(key, list);
            Assert.DoesNotContain(magpie.Output, line => line.Contains(key));
        }
        Assert.Contains("reader\tread", list);
    }

    [Fact]
    public async Task Failed_logins_are_answered_late_and_logged_without_the_key_while_good_keys_pass_at_once()
    {
        var dataDir = Directory.CreateTempSubdirectory("magpie-keys-").FullName;
        var good = await TestKeys.CreateAsync(dataDir, "read", "reader");
        await using var magpie = await MagpieProcess.StartAsync(dataDir: dataDir);
        using var http = new HttpClient { BaseAddress = magpie.BaseUrl, Timeout = TimeSpan.FromSeconds(60) };

        // One after another: 0.25 + 0.5 + 1 + 2 s at least before the fourth refusal arrives.
        var clock = Stopwatch.StartNew();
        for (var i = 0; i < 4; i++)
            await HttpJson.AssertProblem(await http.SendAsync(Send(HttpMethod.Get, "stats", null, $"mgp_wrong{i}")), HttpStatusCode.Unauthorized, "matches no key");
        Assert.True(clock.Elapsed >= TimeSpan.FromSeconds(3.5), $"four failed logins took only {clock.Elapsed}");

        // The right key from the same address is not held up by the guesses: it is answered before any of the guesses that
        // wait for their refusal (4 s and more by now), though it was sent after them.
        async Task<(HttpStatusCode Status, long At)> Guess(int i)
        {
            var response = await http.SendAsync(Send(HttpMethod.Get, "stats", null, $"mgp_parallel{i}"));
            return (response.StatusCode, Stopwatch.GetTimestamp());
        }
        var guessing = Enumerable.Range(0, 20).Select(Guess).ToList();
        await Task.Delay(300);
        Assert.Equal(HttpStatusCode.OK, (await http.SendAsync(Send(HttpMethod.Get, "stats", null, good))).StatusCode);
        var goodAnswered = Stopwatch.GetTimestamp();
        // In parallel, at most 8 guesses wait for their answer; the rest are refused at once.
        var answers = await Task.WhenAll(guessing);
        Assert.Equal(8, answers.Count(a => a.Status == HttpStatusCode.Unauthorized));
        Assert.Equal(12, answers.Count(a => a.Status == HttpStatusCode.TooManyRequests));
        var firstRefusal = answers.Where(a => a.Status == HttpStatusCode.Unauthorized).Min(a => a.At);
        Assert.True(goodAnswered < firstRefusal,
            $"a good key was answered {Stopwatch.GetElapsedTime(firstRefusal, goodAnswered).TotalMilliseconds:F0} ms after a failed one sent before it");

        var logged = magpie.Output.Where(l => l.Contains("failed login on HTTP from 127.0.0.1")).ToList();
        Assert.True(logged.Count >= 24, string.Join('\n', magpie.Output));
        Assert.DoesNotContain(magpie.Output, l => l.Contains("mgp_wrong") || l.Contains("mgp_parallel"));
    }

    [Fact]
    public async Task Keys_are_the_postgresql_users_checked_by_scram_and_slowed_when_wrong()
    {
        var dataDir = Directory.CreateTempSubdirectory("magpie-keys-").FullName;
        var grafana = await TestKeys.CreateAsync(dataDir, "read", "grafana");
        var other = await TestKeys.CreateAsync(dataDir, "write", "other");
        await using var magpie = await MagpieProcess.StartAsync(dataDir: dataDir);
        string Connection(string user, string password) =>
            $"Host=127.0.0.1;Port={magpie.PgPort};Username={user};Password={password};Database=magpie;Pooling=false;Server Compatibility Mode=NoTypeLoading";
        await using (var ok = new NpgsqlConnection(Connection("grafana", grafana)))
        {
            await ok.OpenAsync();
            await using var cmd = new NpgsqlCommand("SELECT 1", ok);
            Assert.Equal(1, await cmd.ExecuteScalarAsync());
        }
        // A wrong password, an unknown user, another key's secret under this name: the same answer, late.
        var clock = Stopwatch.StartNew();
        foreach (var (user, password) in new[] { ("grafana", "wrong"), ("nobody", grafana), ("grafana", other) })
        {
            await using var bad = new NpgsqlConnection(Connection(user, password));
            var e = await Assert.ThrowsAsync<PostgresException>(() => bad.OpenAsync());
            Assert.Equal("28P01", e.SqlState);
        }
        Assert.True(clock.Elapsed >= TimeSpan.FromSeconds(1.7), $"three failed logins took only {clock.Elapsed}");
        var psql = await PostgresEndpointTests.PsqlAsync(magpie.PgPort, "select 1", user: "grafana", password: grafana);
        Assert.True(psql.Exit == 0, psql.Error);
        Assert.Equal("1", psql.Output.Trim());
        Assert.Contains(magpie.Output, l => l.Contains("failed login on PostgreSQL from 127.0.0.1") && l.Contains("\"nobody\""));
        Assert.DoesNotContain(magpie.Output, l => l.Contains(grafana) || l.Contains(other));
    }

    internal static HttpRequestMessage Send(HttpMethod method, string path, string? body, string? key, bool viaHeader = false)
    {
        var request = new HttpRequestMessage(method, path);
        if (body is not null) request.Content = new StringContent(body, Encoding.UTF8, "application/json");
        if (key is not null && viaHeader) request.Headers.Add("X-Api-Key", key);
        else if (key is not null) request.Headers.Authorization = new("Bearer", key);
        return request;
    }

    private static async Task Eventually(Func<Task<bool>> condition)
    {
        var deadline = DateTime.UtcNow.AddSeconds(15);
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "the condition did not hold within 15 s");
            await Task.Delay(200);
        }
    }
}
