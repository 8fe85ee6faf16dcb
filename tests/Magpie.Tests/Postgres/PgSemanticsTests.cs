using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;
using Npgsql;
using NpgsqlTypes;

namespace Magpie.Tests.Postgres;

/// <summary>
/// Right or refused: the same SQL, through psql, against Magpie's endpoint and against a real PostgreSQL holding the same
/// posts (loaded from the Stack Exchange XML into a table with the column types Magpie reports). Every answer must be the
/// same rows, or the same SQLSTATE — NULL and missing fields, NOT over unknowns, literals coerced to the column's type, and
/// comparisons PostgreSQL has no operator for.
/// </summary>
public sealed partial class PgSemanticsTests(PgSampleFixture fx) : IClassFixture<PgSampleFixture>
{
    private const string Table = "\"Posts/Stats\"";

    public static readonly TheoryData<string> Answers = new()
    {
        $"""SELECT count(*) FROM {Table} WHERE "Title" IS NULL""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" IS NOT NULL""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" IS NOT NULL AND "PostTypeId" = 2""",
        $"""SELECT count(*) FROM {Table} WHERE "Score" >= '10'""",
        $"""SELECT count(*) FROM {Table} WHERE "Score" = '10' OR "Score" = ' 3 '""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" <> 'x'""",
        $"""SELECT count(*) FROM {Table} WHERE NOT ("Title" = 'x')""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" < 'M'""",
        $"""SELECT count(*) FROM {Table} WHERE NOT ("Title" < 'M')""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" NOT IN ('a', 'b')""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" BETWEEN 'A' AND 'M'""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" NOT BETWEEN 'A' AND 'M'""",
        $"""SELECT count(*) FROM {Table} WHERE NOT ("Title" IS NULL OR "Score" > 3)""",
        $"""SELECT count(*) FROM {Table} WHERE NOT (NOT ("Title" >= 'S') AND "Score" < 2)""",
        $"""SELECT count(*) FROM {Table} WHERE "CreationDate" >= '2015-01-01'""",
        $"""SELECT count(*) FROM {Table} WHERE "CreationDate" < '2014-06-01T00:00:00Z' AND "Score" < 0""",
        $"""SELECT count(*) FROM {Table} WHERE "PostTypeId" IN (1, '2')""",
        $"""SELECT "PostTypeId", count(*) FROM {Table} WHERE "Title" IS NULL GROUP BY 1 ORDER BY 1""",
        $"""SELECT "PostTypeId", count(*), sum("Score") FROM {Table} WHERE NOT ("Score" BETWEEN 0 AND 2) GROUP BY 1 ORDER BY 1""",
        // Grafana users' time buckets and date ranges: date_trunc by calendar unit, min and max of a timestamp.
        $"""SELECT date_trunc('year', "CreationDate") AS y, count(*) FROM {Table} GROUP BY 1 ORDER BY 1""",
        $"""SELECT date_trunc('month', "CreationDate"), count(*), avg("Score") FROM {Table} WHERE "CreationDate" >= '2014-01-01' GROUP BY 1 ORDER BY 1""",
        $"""SELECT date_trunc('week', "CreationDate") AS w, count(*) FROM {Table} WHERE "CreationDate" < '2012-01-01' GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5""",
        $"""SELECT date_trunc('day', "CreationDate") AS d, max("Score") FROM {Table} GROUP BY 1 ORDER BY 1 DESC LIMIT 5""",
        $"""SELECT date_trunc('hour', "CreationDate") AS h, count(*) FROM {Table} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3""",
        $"""SELECT min("CreationDate"), max("CreationDate"), count("CreationDate") FROM {Table}""",
        // What Grafana's $__timeGroupAlias and $__timeFilter expand to (the pg benchmark's query).
        $"""SELECT floor(extract(epoch from "CreationDate")/2592000)*2592000 AS "time", count(*) AS "posts", avg("Score") AS "score" FROM {Table} WHERE "CreationDate" BETWEEN '2008-01-01T00:00:00Z' AND '2025-01-01T00:00:00Z' GROUP BY 1 ORDER BY 1""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" >= 'A' AND "Title" IS NOT NULL AND "Score" <> 1""",
        $"""SELECT "PostTypeId", min("CreationDate"), max("CreationDate") FROM {Table} GROUP BY 1 ORDER BY 1""",
        $"""SELECT "CreationDate" FROM {Table} WHERE "Score" > 30 ORDER BY 1 LIMIT 3""",
        // A missing field is NULL in GROUP BY and ORDER BY too: its group, and NULLs last ascending, first descending.
        $"""SELECT "Title", count(*) FROM {Table} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3""",
        $"""SELECT "Title" IS NULL AS untitled, count(*), avg("Score") FROM {Table} GROUP BY 1 ORDER BY 1""",
        $"""SELECT "Title", max("Score") FROM {Table} WHERE "Score" > 20 GROUP BY 1 ORDER BY 1 DESC""",
        $"""SELECT "Title" FROM {Table} ORDER BY 1 DESC LIMIT 3""",
        $"""SELECT "Title", "Score" FROM {Table} WHERE "Score" > 15 ORDER BY 1, 2""",
        $"""SELECT "Score" FROM {Table} LIMIT 0""",
        $"""SELECT "PostTypeId", count(*) FROM {Table} GROUP BY 1 ORDER BY 1 LIMIT 0""",
        $"""SELECT "CreationDate", "Score" FROM {Table} ORDER BY 1 DESC, 2 LIMIT 5""",
        $"""SELECT "Title" FROM {Table} WHERE "Title" >= 'W' ORDER BY "Title" LIMIT 10""",
        // Evaluated outside the index (DuckDB over its rows): what Grafana's panels, variables and query builder send.
        $"""SELECT CASE WHEN "Score" > 10 THEN 'high' WHEN "Score" > 0 THEN 'some' ELSE 'none' END AS band, count(*) FROM {Table} GROUP BY 1 ORDER BY 1""",
        $"""SELECT "Score" * 2 + 1 AS s FROM {Table} WHERE "Score" > 40 ORDER BY 1""",
        $"""SELECT coalesce("Title", '(none)') AS t FROM {Table} WHERE "Score" > 30 ORDER BY "Score" DESC, 1 LIMIT 5""",
        $"""SELECT lower("Title") FROM {Table} WHERE "Title" ILIKE '%history%' ORDER BY 1 LIMIT 10""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" LIKE 'What%'""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" NOT LIKE '%?'""",
        $"""SELECT count(*) FROM {Table} m WHERE m."Score" > 5""",
        $"""SELECT DISTINCT "PostTypeId" FROM {Table} ORDER BY 1""",
        $"""SELECT "PostTypeId", count(*) FROM {Table} GROUP BY 1 HAVING count(*) > 100 ORDER BY 1""",
        $"""SELECT date_trunc('year', "CreationDate") AS y, "PostTypeId", count(*) FROM {Table} GROUP BY 1, 2 ORDER BY 1, 2""",
        $"""SELECT count(DISTINCT "PostTypeId"), count(DISTINCT "Title") FROM {Table}""",
        $"""SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY "Score") FROM {Table}""",
        $"""SELECT sum(CASE WHEN "Title" IS NULL THEN 1 ELSE 0 END) AS untitled, count(*) FILTER (WHERE "Score" > 3) AS good FROM {Table}""",
        $"""SELECT count("Title"), min("Title"), max("Title") FROM {Table}""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" = ANY(ARRAY['a', 'b'])""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" IS DISTINCT FROM NULL""",
        $"""SELECT count(*) FROM {Table} WHERE "CreationDate" > now() - interval '100 years'""",
        $"""SELECT 41 + 1, 7 / 2, -7 / 2""",
        $"""SELECT stddev_samp("Score") > 0 FROM {Table}""",
        $"""SELECT "Title", "Score", rank() OVER (ORDER BY "Score" DESC) FROM {Table} WHERE "Score" > 25 ORDER BY 3, 1""",
        $"""WITH top AS (SELECT "Score" FROM {Table} WHERE "Score" > 20) SELECT count(*), max("Score") FROM top""",
        $"""SELECT extract(year FROM "CreationDate") AS y, count(*) FROM {Table} GROUP BY 1 ORDER BY 1""",
        $"""SELECT "Title" FROM {Table} WHERE "Score" > 20 ORDER BY "Title" NULLS FIRST, "Score" LIMIT 5""",
        $"""SELECT count(*) FROM {Table} WHERE length("Title") > 60""",
        $"""SELECT "NoSuchColumn" + 1 FROM {Table}""",
        $"""SELECT count(*) FROM "NoSuchTable" WHERE 1 + 1 = 2""",
        // Refused by both, with the same SQLSTATE.
        $"""SELECT date_trunc('fortnight', "CreationDate"), count(*) FROM {Table} GROUP BY 1""",
        $"""SELECT sum("CreationDate") FROM {Table}""",
        $"""SELECT count(*) FROM {Table} WHERE "CreationDate" > 5""",
        $"""SELECT count(*) FROM {Table} WHERE "Score" > 'abc'""",
        $"""SELECT count(*) FROM {Table} WHERE "Title" = 5""",
        $"""SELECT count(*) FROM {Table} WHERE "CreationDate" > 'not a date'""",
    };

    [Theory]
    [MemberData(nameof(Answers))]
    public async Task Magpie_answers_as_postgresql_does_or_refuses_with_its_sqlstate(string sql)
    {
        var postgres = await ReferenceAsync();
        var expected = Normalise(await PostgresEndpointTests.PsqlAsync(postgres.Port, sql, user: "postgres", database: "postgres", host: postgres.Host));
        var actual = Normalise(await PostgresEndpointTests.PsqlAsync(fx.Magpie.PgPort, sql));
        Assert.Equal(expected, actual);
    }

    /// <summary>The rows, or "ERROR sqlstate" (the messages' words may differ).</summary>
    private static string Normalise((int Exit, string Output, string Error) psql) =>
        psql.Exit == 0 ? psql.Output.Trim() : SqlState().Match(psql.Error) is { Success: true } m ? $"ERROR {m.Groups[1].Value}" : $"FAILED {psql.Error}";

    [GeneratedRegex(@"ERROR:\s+([0-9A-Z]{5}):")]
    private static partial Regex SqlState();

    // One reference server for the class, loaded once.
    private static readonly SemaphoreSlim Loading = new(1, 1);
    private static PostgresServer? _reference;

    private async Task<PostgresServer> ReferenceAsync()
    {
        await Loading.WaitAsync();
        try
        {
            if (_reference is not null) return _reference;
            var pg = await PostgresServer.StartAsync();
            AppDomain.CurrentDomain.ProcessExit += (_, _) => pg.DisposeAsync().AsTask().GetAwaiter().GetResult();
            // The columns as Magpie types them, so both sides coerce literals to the same types.
            var columns = new List<(string Name, string Type)>();
            await using (var magpie = new NpgsqlConnection(fx.ConnectionString()))
            {
                await magpie.OpenAsync();
                await using var cmd = new NpgsqlCommand("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'Posts/Stats'", magpie);
                await using var reader = await cmd.ExecuteReaderAsync();
                while (await reader.ReadAsync()) columns.Add((reader.GetString(0), reader.GetString(1)));
            }
            Assert.Equal(["CreationDate", "PostTypeId", "Score", "Title"], columns.Select(c => c.Name).Order());
            await using var db = new NpgsqlConnection(pg.ConnectionString);
            await db.OpenAsync();
            await using (var create = new NpgsqlCommand($"CREATE TABLE {Table} ({string.Join(", ", columns.Select(c => $"\"{c.Name}\" {c.Type}"))})", db))
                await create.ExecuteNonQueryAsync();
            var type = columns.ToDictionary(c => c.Name, c => c.Type);
            await using (var import = await db.BeginBinaryImportAsync($"COPY {Table} (\"PostTypeId\", \"Score\", \"CreationDate\", \"Title\") FROM STDIN (FORMAT BINARY)"))
            {
                foreach (var p in fx.Posts)
                {
                    await import.StartRowAsync();
                    if (type["PostTypeId"] == "text") await import.WriteAsync(p.Type, NpgsqlDbType.Text);
                    else await import.WriteAsync(double.Parse(p.Type, System.Globalization.CultureInfo.InvariantCulture), NpgsqlDbType.Double);
                    await import.WriteAsync((double)p.Score, NpgsqlDbType.Double);
                    await import.WriteAsync(p.Created, NpgsqlDbType.TimestampTz);
                    if (p.Title is null) await import.WriteNullAsync();
                    else await import.WriteAsync(p.Title, NpgsqlDbType.Text);
                }
                await import.CompleteAsync();
            }
            return _reference = pg;
        }
        finally { Loading.Release(); }
    }
}
