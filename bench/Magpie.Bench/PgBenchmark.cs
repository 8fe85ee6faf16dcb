using System.Diagnostics;
using Magpie.Contracts.Indexes;
using Npgsql;

namespace Magpie.Bench;

/// <summary>
/// The PostgreSQL endpoint benchmark, with Npgsql over a real connection: rows per second of a streamed
/// SELECT of every post, and the latency of a Grafana-style time-grouped aggregate (what <c>$__timeGroupAlias</c>,
/// <c>$__timeFilter</c> expand to) over all of them.
/// </summary>
public static class PgBenchmark
{
    public const string Name = "Bench/Pg";

    public static readonly IndexDefinition Definition = new()
    {
        Maps = ["map('Posts', p => ({ CreationDate: p.CreationDate, Score: p.Score, ViewCount: p.ViewCount, Host: 'host-' + (p.OwnerUserId % 8) }))"],
    };

    /// <summary>The same index with its fields stored: a SELECT of them is answered from the index, no document read.</summary>
    public const string StoredName = "Bench/PgStored";

    public static readonly IndexDefinition StoredDefinition = Definition with
    {
        Fields = new() { ["CreationDate"] = new() { Store = true }, ["Score"] = new() { Store = true }, ["ViewCount"] = new() { Store = true } },
    };

    /// <summary>One bucket per 30 days over the whole generated range (2008–2024), count and average score.</summary>
    public const string TimeGrouped = """
        SELECT floor(extract(epoch from "CreationDate")/2592000)*2592000 AS "time", count(*) AS "posts", avg("Score") AS "score"
        FROM "Bench/Pg" WHERE "CreationDate" BETWEEN '2008-01-01T00:00:00Z' AND '2025-01-01T00:00:00Z' GROUP BY 1 ORDER BY 1
        """;

    /// <summary>A multi-series panel: one day of 5-minute buckets, one series per host (two grouping keys).</summary>
    public const string MultiSeries = """
        SELECT floor(extract(epoch from "CreationDate")/300)*300 AS "time", "Host" AS metric, count(*) AS "value"
        FROM "Bench/Pg" WHERE "CreationDate" BETWEEN '2016-06-01T00:00:00Z' AND '2016-06-02T00:00:00Z' GROUP BY 1, 2 ORDER BY 1, 2
        """;

    /// <summary>A template variable's query.</summary>
    public const string Distinct = """SELECT DISTINCT "Host" FROM "Bench/Pg" ORDER BY 1""";

    /// <summary>Each run's milliseconds to the last row, and the rows of the last run.</summary>
    public static async Task<(List<double> Ms, long Rows)> LatencyAsync(string connection, string sql, int runs)
    {
        await using var db = new NpgsqlConnection(connection);
        await db.OpenAsync();
        var ms = new List<double>();
        long rows = 0;
        for (var i = 0; i < runs; i++)
        {
            await using var cmd = new NpgsqlCommand(sql, db);
            var watch = Stopwatch.StartNew();
            await using var reader = await cmd.ExecuteReaderAsync();
            rows = 0;
            while (await reader.ReadAsync()) rows++;
            ms.Add(watch.Elapsed.TotalMilliseconds);
        }
        return (ms, rows);
    }

    public static async Task<(long Rows, TimeSpan Elapsed)> StreamAsync(string connection, string index = Name)
    {
        await using var db = new NpgsqlConnection(connection);
        await db.OpenAsync();
        await using var cmd = new NpgsqlCommand($"SELECT \"CreationDate\", \"Score\", \"ViewCount\" FROM \"{index}\"", db) { CommandTimeout = 600 };
        var watch = Stopwatch.StartNew();
        long rows = 0;
        await using var reader = await cmd.ExecuteReaderAsync();
        while (await reader.ReadAsync())
        {
            _ = reader.GetDateTime(0);
            _ = reader.GetDouble(1);
            rows++;
        }
        return (rows, watch.Elapsed);
    }

    public static async Task<(List<double> Ms, long Buckets, long Posts)> TimeGroupedAsync(string connection, int runs)
    {
        await using var db = new NpgsqlConnection(connection);
        await db.OpenAsync();
        var ms = new List<double>();
        long buckets = 0, posts = 0;
        for (var i = 0; i < runs; i++)
        {
            await using var cmd = new NpgsqlCommand(TimeGrouped, db);
            var watch = Stopwatch.StartNew();
            await using var reader = await cmd.ExecuteReaderAsync();
            buckets = posts = 0;
            while (await reader.ReadAsync()) { buckets++; posts += reader.GetInt64(1); }
            ms.Add(watch.Elapsed.TotalMilliseconds);
        }
        return (ms, buckets, posts);
    }
}
