using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Http.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;
using Npgsql;

namespace Magpie.Tests.Postgres;

/// <summary>A magpie process (trust: loopback, no users) holding the Stack Exchange sample and an index over its posts.</summary>
public sealed class PgSampleFixture : IAsyncLifetime
{
    public MagpieProcess Magpie { get; private set; } = null!;
    public List<Post> Posts { get; } = new StackExchangeXml(RepoPaths.StackExchangeSample).Posts.Select(p => new Post(
        (string)p.Attribute("PostTypeId")!, (long)p.Attribute("Score")!, (string?)p.Attribute("Title"),
        DateTime.Parse((string)p.Attribute("CreationDate")!, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal))).ToList();

    public sealed record Post(string Type, long Score, string? Title, DateTime Created);

    public const string Index = """
        { "maps": ["map('Posts', p => ({ PostTypeId: p.PostTypeId, Score: p.Score, CreationDate: p.CreationDate, Title: p.Title }))"] }
        """;

    public async Task InitializeAsync()
    {
        Magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", Magpie.BaseUrl.ToString());
        if (exit != 0) throw new InvalidOperationException(output);
        var put = await Magpie.Http.PutAsync("indexes/Posts/Stats", HttpJson.Json(Index));
        if (put.StatusCode != HttpStatusCode.NoContent) throw new InvalidOperationException(await put.Content.ReadAsStringAsync());
        var wait = await Magpie.Http.PostAsJsonAsync("queries", new { query = "from index 'Posts/Stats'", pageSize = 1, waitForNonStaleResults = true, timeoutMs = 60_000 });
        if (!wait.IsSuccessStatusCode) throw new InvalidOperationException(await wait.Content.ReadAsStringAsync());
    }

    public async Task DisposeAsync() => await Magpie.DisposeAsync();

    public string ConnectionString(string? user = "grafana", string? password = null) =>
        $"Host=127.0.0.1;Port={Magpie.PgPort};Username={user};Database=magpie;Pooling=false" + (password is null ? "" : $";Password={password}");
}

/// <summary>
/// The PostgreSQL wire endpoint over real connections: psql (simple protocol) and Npgsql (extended protocol, binary
/// results), Grafana's probes and its query builder's introspection (statements as Grafana's source writes them), the SQL
/// that Grafana's macros expand to, with values computed from Posts.xml; errors with SQLSTATE codes; SCRAM-SHA-256.
/// </summary>
public sealed class PostgresEndpointTests(PgSampleFixture fx) : IClassFixture<PgSampleFixture>
{
    [Fact]
    public async Task Psql_gets_grafanas_probes_several_statements_per_query_and_errors_with_sqlstate()
    {
        Assert.Equal("1600", (await PsqlAsync("SELECT current_setting('server_version_num')::int/100 as version")).Output.Trim());
        var ping = await PsqlAsync("-- ping");   // Grafana's health check: an empty, comment-only query
        Assert.Equal(0, ping.Exit);
        Assert.Equal("", ping.Output.Trim());
        Assert.Equal(["1", "16.0"], (await PsqlAsync("select 1; show server_version")).Output.Split('\n', StringSplitOptions.RemoveEmptyEntries));
        Assert.Equal("", (await PsqlAsync("SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'")).Output.Trim());

        // Grafana's query builder (postgresMetaQuery.ts): schemas, tables, then an index's columns with their types.
        Assert.Equal("public", (await PsqlAsync("""
            SELECT schema_name AS "name" FROM information_schema.schemata
            WHERE schema_name NOT IN ('information_schema', 'pg_catalog', 'pg_toast', '_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental')
            ORDER BY schema_name
            """)).Output.Trim());
        Assert.Contains("\"Posts/Stats\"", (await PsqlAsync("""SELECT quote_ident(table_name) AS "table" FROM information_schema.tables WHERE quote_ident(table_schema) = 'public' ORDER BY 1""")).Output.Split('\n'));
        var columns = (await PsqlAsync("""
            SELECT quote_ident(column_name) AS "column", data_type AS "type"
            FROM information_schema.columns
            WHERE
              CASE WHEN array_length(parse_ident('"Posts/Stats"'),1) = 2
                THEN quote_ident(table_schema) = (parse_ident('"Posts/Stats"'))[1]
                  AND quote_ident(table_name) = (parse_ident('"Posts/Stats"'))[2]
                ELSE quote_ident(table_name) = '"Posts/Stats"'
                  AND quote_ident(table_schema) IN (SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1), array_upper(string_to_array(current_setting('search_path'),','),1)) as i, string_to_array(current_setting('search_path'),',') s)
              END
            """)).Output.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(["\"CreationDate\"|timestamp with time zone", "\"PostTypeId\"|double precision", "\"Score\"|double precision", "\"Title\"|text"], columns);

        foreach (var (sql, state) in new[]
        {
            ("select * from \"NoSuchIndex\"", "42P01"),
            ("select \"Nope\" from \"Posts/Stats\"", "42703"),
            ("select from where", "42601"),
            ("insert into \"Posts/Stats\" values (1)", "25006"),
            ("show no_such_setting", "42704"),
        })
        {
            var failed = await PsqlAsync(sql);
            Assert.NotEqual(0, failed.Exit);
            Assert.Contains($"ERROR:  {state}:", failed.Error);
        }
    }

    [Theory]
    [InlineData("or-50000", "the limit is 262,144")]
    [InlineData("or-2000", "more than 1,024 conditions")]
    [InlineData("parens", "more than 64 levels deep")]
    [InlineData("sum", "more than 4,096 terms")]
    [InlineData("in", "more than 1,024 values")]
    public async Task A_statement_past_a_parser_limit_is_refused_with_54001_and_the_connection_goes_on(string shape, string expected)
    {
        await using var db = new NpgsqlConnection(fx.ConnectionString());
        await db.OpenAsync();
        var where = shape switch
        {
            "or-50000" => string.Join(" OR ", Enumerable.Range(0, 50_000).Select(i => $"\"Score\" = {i}")),
            "or-2000" => string.Join(" OR ", Enumerable.Range(0, 2_000).Select(i => $"\"Score\" = {i}")),
            "parens" => new string('(', 100_000) + "\"Score\" = 1" + new string(')', 100_000),
            "sum" => "\"Score\" = " + string.Join(" + ", Enumerable.Repeat("1", 20_000)),
            _ => "\"Score\" IN (" + string.Join(", ", Enumerable.Range(0, 2_000)) + ")",
        };
        await using (var cmd = new NpgsqlCommand($"""SELECT count(*) FROM "Posts/Stats" WHERE {where}""", db))
        {
            var e = await Assert.ThrowsAsync<PostgresException>(() => cmd.ExecuteScalarAsync());
            Assert.Equal("54001", e.SqlState);
            Assert.Contains(expected, e.MessageText);
        }
        await using var ok = new NpgsqlCommand("""SELECT count(*) FROM "Posts/Stats" WHERE "Score" >= 0""", db);
        Assert.True((long)(await ok.ExecuteScalarAsync())! > 0);
    }

    [Theory]
    // RQL that does not parse, a literal past a double, an RQL `or` over the condition limit, and SQL whose RQL fails only when
    // its first row is read: each an ErrorResponse with its SQLSTATE, and the next statement in the same session answers.
    [InlineData("from index 'Posts/Stats' where (", "42601")]
    [InlineData("from index 'Posts/Stats' where Score > 1e400", "")]
    [InlineData("rql-or-20000", "42601")]
    [InlineData("from index 'NoSuchIndex'", "42P01")]
    [InlineData("""SELECT "Title" FROM "Posts/Stats" WHERE "Score" > 1e400""", "")]
    public async Task A_statement_that_fails_to_parse_or_plan_is_an_error_and_the_session_goes_on(string statement, string state)
    {
        if (statement == "rql-or-20000") statement = "from index 'Posts/Stats' where " + string.Join(" or ", Enumerable.Range(0, 20_000).Select(i => $"Score = {i}"));
        await using var db = new NpgsqlConnection(fx.ConnectionString());
        await db.OpenAsync();
        await using (var bad = new NpgsqlCommand(statement, db))
        {
            try
            {
                // A literal past a double may also be answered (as infinity, matching nothing); what may not happen is a dropped session.
                await using var reader = await bad.ExecuteReaderAsync();
                while (await reader.ReadAsync()) { }
                Assert.Equal("", state);
            }
            catch (PostgresException e) when (state == "" || e.SqlState == state) { Assert.NotEmpty(e.MessageText); }
        }
        Assert.Equal(System.Data.ConnectionState.Open, db.State);
        await using var ok = new NpgsqlCommand("""SELECT count(*) FROM "Posts/Stats" WHERE "Score" >= 0""", db);
        Assert.True((long)(await ok.ExecuteScalarAsync())! > 0);
        // psql, simple protocol: the error, then the next statement of the same query string.
        var psql = await PsqlAsync(statement.Length < 1000 ? $"{statement}; select 1" : "select 1");
        Assert.DoesNotContain("server closed the connection", psql.Error);
    }

    [Theory]
    // The 16 MB statement as one unknown word; names just under the 256 KiB statement limit: the error quotes a short prefix.
    [InlineData("word", "42601")]
    [InlineData("table", "42P01")]
    [InlineData("column", "42703")]
    public async Task An_error_quotes_only_a_short_prefix_of_a_huge_statement(string shape, string state)
    {
        await using var db = new NpgsqlConnection(fx.ConnectionString());
        await db.OpenAsync();
        var name = new string('x', 200_000);
        var sql = shape switch
        {
            "word" => new string('x', 16 * 1024 * 1024 - 1024),
            "table" => $"""SELECT count(*) FROM "{name}" """,
            _ => $"""SELECT "{name}" FROM "Posts/Stats" """,
        };
        await using (var cmd = new NpgsqlCommand(sql, db))
        {
            var e = await Assert.ThrowsAsync<PostgresException>(() => cmd.ExecuteScalarAsync());
            Assert.Equal(state, e.SqlState);
            Assert.True(e.MessageText.Length < 300, $"{e.MessageText.Length} characters: {e.MessageText[..Math.Min(300, e.MessageText.Length)]}");
            Assert.Contains("xxxx…", e.MessageText);
        }
        await using var ok = new NpgsqlCommand("""SELECT count(*) FROM "Posts/Stats" WHERE "Score" >= 0""", db);
        Assert.True((long)(await ok.ExecuteScalarAsync())! > 0);
    }

    [Fact]
    public async Task Grafana_macro_sql_returns_typed_columns_and_the_values_of_the_xml()
    {
        await using var db = new NpgsqlConnection(fx.ConnectionString());
        await db.OpenAsync();

        // $__timeGroupAlias("CreationDate",'1d'), count(*) … WHERE $__timeFilter("CreationDate") GROUP BY 1 ORDER BY 1, as Grafana expands them.
        var from = new DateTime(2012, 1, 1, 0, 0, 0, DateTimeKind.Utc);
        var to = new DateTime(2013, 1, 1, 0, 0, 0, DateTimeKind.Utc);
        var perDay = await RowsAsync(db, """
            SELECT floor(extract(epoch from "CreationDate")/86400)*86400 AS "time", count(*) AS "posts", max("Score") AS "best"
            FROM "Posts/Stats" WHERE "CreationDate" BETWEEN '2012-01-01T00:00:00Z' AND '2013-01-01T00:00:00Z' GROUP BY 1 ORDER BY 1
            """, ("time", "double precision"), ("posts", "bigint"), ("best", "double precision"));
        var expectedDays = fx.Posts.Where(p => p.Created >= from && p.Created <= to)
            .GroupBy(p => Math.Floor((p.Created - DateTime.UnixEpoch).TotalSeconds / 86400) * 86400).OrderBy(g => g.Key)
            .Select(g => (g.Key, (long)g.Count(), (double)g.Max(p => p.Score))).ToList();
        Assert.NotEmpty(expectedDays);
        Assert.Equal(expectedDays, perDay.Select(r => ((double)r[0]!, (long)r[1]!, (double)r[2]!)));

        // A term GROUP BY with every aggregate, filtered, ordered by an aggregate.
        var perType = await RowsAsync(db, """
            SELECT "PostTypeId", count(*), sum("Score"), avg("Score"), min("Score"), max("Score") FROM "Posts/Stats" WHERE "Score" >= 1 GROUP BY "PostTypeId" ORDER BY 2 DESC
            """, ("PostTypeId", "double precision"), ("count", "bigint"), ("sum", "double precision"), ("avg", "double precision"), ("min", "double precision"), ("max", "double precision"));
        var expectedTypes = fx.Posts.Where(p => p.Score >= 1).GroupBy(p => double.Parse(p.Type, CultureInfo.InvariantCulture))
            .OrderByDescending(g => g.Count()).Select(g => (g.Key, (long)g.Count(), (double)g.Sum(p => p.Score), Math.Round(g.Average(p => p.Score), 9), (double)g.Min(p => p.Score), (double)g.Max(p => p.Score))).ToList();
        Assert.Equal(expectedTypes, perType.Select(r => ((double)r[0]!, (long)r[1]!, (double)r[2]!, Math.Round((double)r[3]!, 9), (double)r[4]!, (double)r[5]!)));

        // $__time("CreationDate") with a bound parameter ($1, sent binary by Npgsql), ORDER BY and LIMIT.
        var top = await RowsAsync(db, """
            SELECT "CreationDate" AS "time", "Score", "Title" FROM "Posts/Stats" WHERE "Score" > $1 ORDER BY "Score" DESC LIMIT 5
            """, [10], ("time", "timestamp with time zone"), ("Score", "double precision"), ("Title", "text"));
        var expectedTop = fx.Posts.Where(p => p.Score > 10).OrderByDescending(p => p.Score).Take(5).ToList();
        Assert.Equal(expectedTop.Select(p => (double)p.Score), top.Select(r => (double)r[1]!));
        Assert.All(top, r => Assert.Contains(fx.Posts, p => p.Created == (DateTime)r[0]! && p.Title == (string?)r[2]));

        // Totals without GROUP BY, and RQL as-is.
        Assert.Equal(fx.Posts.Count, (long)(await RowsAsync(db, "SELECT count(*) FROM \"Posts/Stats\"", ("count", "bigint")))[0][0]!);
        var rql = await RowsAsync(db, "from index 'Posts/Stats' where Score >= 30 select Title", ("Title", "json"));
        Assert.Equal(fx.Posts.Count(p => p.Score >= 30), rql.Count);
    }

    /// <summary>search() in a WHERE and highlight() in the select list: the rows the RQL search finds, each title's matched words marked.</summary>
    [Fact]
    public async Task Search_and_highlight_in_sql_answer_as_rql_does()
    {
        await fx.Magpie.Http.PutIndexAsync("Posts/Titles", """
            { "maps": ["map('Posts', p => ({ Title: p.Title || null, Score: p.Score }))"], "fields": { "Title": { "indexing": "search", "store": true } } }
            """);
        var rql = await fx.Magpie.Http.QueryNonStaleAsync("from index 'Posts/Titles' where search(Title, 'history') and Score >= 0 select Title");
        await using var db = new NpgsqlConnection(fx.ConnectionString());
        await db.OpenAsync();
        var rows = await RowsAsync(db, """SELECT "Title", highlight("Title", 64, 1) AS marked FROM "Posts/Titles" WHERE search("Title", 'history') AND "Score" >= 0""",
            ("Title", "text"), ("marked", "text"));
        Assert.Equal(rql.GetProperty("totalResults").GetInt32(), rows.Count);
        Assert.NotEmpty(rows);
        Assert.All(rows, r =>
        {
            var marked = (string)r[1]!;
            Assert.Contains("<b>", marked);
            Assert.Contains(System.Net.WebUtility.HtmlDecode(marked.Replace("<b>", "").Replace("</b>", "")), (string)r[0]!);
        });
        var negated = await RowsAsync(db, """SELECT count(*) FROM "Posts/Titles" WHERE NOT search("Title", 'history')""", ("count", "bigint"));
        var titled = (await fx.Magpie.Http.QueryNonStaleAsync("from index 'Posts/Titles' where exists(Title) and not Title = null")).GetProperty("totalResults").GetInt64();
        var found = (await fx.Magpie.Http.QueryNonStaleAsync("from index 'Posts/Titles' where search(Title, 'history')")).GetProperty("totalResults").GetInt64();
        Assert.Equal(titled - found, (long)negated[0][0]!);
    }

    [Fact]
    public async Task Rql_parameters_over_the_extended_protocol_are_quoted_as_rql_quotes_them()
    {
        // The probe's: O'Brien answered 42601 and a backslash path silently matched nothing (they were quoted SQL-style).
        var bulk = await fx.Magpie.Http.BulkPutAsync([("pgnames/1", """{"Name":"O'Brien"}"""), ("pgnames/2", """{"Name":"C:\\data\\x"}"""), ("pgnames/3", """{"Name":"plain"}""")]);
        Assert.True(bulk.IsSuccessStatusCode);
        await fx.Magpie.Http.QueryNonStaleAsync("from pgnames where Name = 'plain'");
        await using var db = new NpgsqlConnection(fx.ConnectionString());
        await db.OpenAsync();
        foreach (var (name, id) in new[] { ("O'Brien", "pgnames/1"), ("C:\\data\\x", "pgnames/2"), ("plain", "pgnames/3") })
        {
            var rows = await RowsAsync(db, "from pgnames where Name = $1", [name], ("id", "text"), ("document", "json"));
            Assert.Equal(id, (string)Assert.Single(rows)[0]!);
        }
        Assert.Empty(await RowsAsync(db, "from pgnames where Name = $1", ["O'Brien' or Name = 'plain"], ("id", "text"), ("document", "json")));
    }

    internal static async Task<List<object?[]>> RowsAsync(NpgsqlConnection db, string sql, params (string Name, string Type)[] columns) =>
        await RowsAsync(db, sql, [], columns);

    internal static async Task<List<object?[]>> RowsAsync(NpgsqlConnection db, string sql, object[] parameters, params (string Name, string Type)[] columns)
    {
        await using var cmd = new NpgsqlCommand(sql, db);
        foreach (var p in parameters) cmd.Parameters.Add(new NpgsqlParameter { Value = p });
        await using var reader = await cmd.ExecuteReaderAsync();
        Assert.Equal(columns, Enumerable.Range(0, reader.FieldCount).Select(i => (reader.GetName(i), reader.GetDataTypeName(i))));
        var rows = new List<object?[]>();
        while (await reader.ReadAsync())
        {
            var row = new object?[reader.FieldCount];
            for (var i = 0; i < row.Length; i++) row[i] = reader.IsDBNull(i) ? null : reader.GetValue(i);
            rows.Add(row);
        }
        return rows;
    }

    /// <summary>What DuckDB evaluates is held to the endpoint's limits: no files, a result cap, and a cancel that stops DuckDB itself.</summary>
    [Fact]
    public async Task Sql_evaluated_outside_the_index_reads_no_files_and_stops_at_its_limits_and_on_cancel()
    {
        var files = await PsqlAsync("SELECT * FROM read_csv('/etc/passwd')");
        Assert.NotEqual(0, files.Exit);
        Assert.Contains("file system operations are disabled", files.Error);
        Assert.DoesNotContain("root:", files.Output);
        var many = await PsqlAsync("SELECT * FROM range(200000)");
        Assert.Contains("54000", many.Error);
        Assert.Contains("add a LIMIT", many.Error);
        // The session's names are the session's, not DuckDB's.
        Assert.Equal("grafana|magpie|grafanax", (await PsqlAsync("SELECT current_user, current_database(), current_user || 'x'")).Output.Trim());

        await using var connection = new NpgsqlConnection(fx.ConnectionString());
        await connection.OpenAsync();
        await using var endless = new NpgsqlCommand("SELECT count(*) FROM range(100000000000)", connection);
        var clock = Stopwatch.StartNew();
        var running = endless.ExecuteScalarAsync();
        await Task.Delay(1_000);
        endless.Cancel();
        // Npgsql reports a cancel it asked for as OperationCanceledException around the server's 57014.
        var canceled = await Assert.ThrowsAsync<OperationCanceledException>(() => running);
        Assert.Equal("57014", Assert.IsType<PostgresException>(canceled.InnerException).SqlState);
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(20), $"the cancel took {clock.Elapsed}");
        // The session goes on.
        await using var next = new NpgsqlCommand("SELECT 41 + 1", connection);
        Assert.Equal(42, Convert.ToInt32(await next.ExecuteScalarAsync(), CultureInfo.InvariantCulture));
    }

    private Task<(int Exit, string Output, string Error)> PsqlAsync(string sql) => PsqlAsync(fx.Magpie.PgPort, sql);

    /// <summary>psql as a user runs it (simple protocol), unaligned, tuples only, errors verbose (with their SQLSTATE).</summary>
    internal static async Task<(int Exit, string Output, string Error)> PsqlAsync(int port, string sql, string user = "grafana", string? password = null,
        string sslMode = "prefer", string database = "magpie", string host = "127.0.0.1")
    {
        var psi = new ProcessStartInfo("psql") { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (var a in new[] { "-h", host, "-p", port.ToString(CultureInfo.InvariantCulture), "-U", user, "-d", database, "-X", "-A", "-t", "-F", "|",
                     "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", "-c", sql })
            psi.ArgumentList.Add(a);
        psi.Environment["PGCONNECT_TIMEOUT"] = "10";
        psi.Environment["PGSSLMODE"] = sslMode;
        if (password is not null) psi.Environment["PGPASSWORD"] = password;
        using var p = Process.Start(psi)!;
        var output = p.StandardOutput.ReadToEndAsync();
        var error = p.StandardError.ReadToEndAsync();
        await p.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(60));
        return (p.ExitCode, await output, await error);
    }
}
