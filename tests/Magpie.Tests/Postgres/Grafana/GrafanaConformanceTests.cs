using System.Globalization;
using Npgsql;
using NpgsqlTypes;

namespace Magpie.Tests.Postgres.Grafana;

/// <summary>
/// Right or refused, the way Grafana uses PostgreSQL: the SQL its PostgreSQL data source sends — its macros as its source
/// expands them (<c>$__timeFilter</c>, <c>$__timeGroupAlias</c>, <c>$__timeEpoch</c>, <c>$__unixEpochGroup</c>, …), the SQL its
/// visual query builder writes (aggregates, filters, GROUP BY, LIMIT), template variable queries, multi-series, stat and
/// table panels — and the catalog queries Grafana and generic tools send, each run on Magpie and on a real PostgreSQL holding
/// the same rows (<see cref="PgMetricsFixture"/>). The same column names and rows (numbers compared as numbers), or the same
/// SQLSTATE.
/// </summary>
public sealed class GrafanaConformanceTests(PgMetricsFixture fx) : IClassFixture<PgMetricsFixture>
{
    [Theory]
    [MemberData(nameof(GrafanaQueries.All), MemberType = typeof(GrafanaQueries))]
    public async Task Magpie_answers_grafanas_sql_as_postgresql_does(string sql)
    {
        var expected = await AnswerAsync(fx.ReferenceSql, sql);
        var actual = await AnswerAsync(fx.MagpieSql, sql);
        Assert.Equal(expected, actual);
    }

    [Fact]
    public void The_suite_holds_at_least_400_queries() => Assert.True(GrafanaQueries.All.Count() >= 400, $"{GrafanaQueries.All.Count()} queries");

    /// <summary>Multi-value variables as Npgsql binds them: a text[] parameter, and numbers and timestamps bound in binary.</summary>
    [Fact]
    public async Task Array_and_typed_parameters_over_the_extended_protocol_answer_as_postgresql_does()
    {
        foreach (var source in new[] { fx.ReferenceSql, fx.MagpieSql })
        {
            await using var cmd = source.CreateCommand("SELECT host, count(*) FROM metrics WHERE host = ANY($1) AND cpu > $2 AND time >= $3 GROUP BY 1 ORDER BY 1");
            cmd.Parameters.Add(new NpgsqlParameter { Value = new[] { "web-01", "DB-2", "it's" }, NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text });
            cmd.Parameters.Add(new NpgsqlParameter { Value = 50.0 });
            cmd.Parameters.Add(new NpgsqlParameter { Value = PgMetricsFixture.Start.AddDays(1), NpgsqlDbType = NpgsqlDbType.TimestampTz });
            await using var reader = await cmd.ExecuteReaderAsync();
            var rows = new List<string>();
            while (await reader.ReadAsync()) rows.Add($"{reader.GetString(0)}={reader.GetInt64(1)}");
            Assert.Equal(["DB-2", "web-01"], rows.Select(r => r.Split('=')[0]));
            if (source == fx.ReferenceSql) _referenceRows = rows;
            else Assert.Equal(_referenceRows, rows);
        }
    }

    private List<string>? _referenceRows;

    /// <summary>The column names and rows as text (numbers as numbers, rows sorted where the statement has no ORDER BY), or the SQLSTATE.</summary>
    private static async Task<string> AnswerAsync(NpgsqlDataSource source, string sql)
    {
        try
        {
            await using var cmd = source.CreateCommand(sql);
            await using var reader = await cmd.ExecuteReaderAsync();
            var names = string.Join('|', Enumerable.Range(0, reader.FieldCount).Select(reader.GetName));
            var rows = new List<string>();
            while (await reader.ReadAsync())
                rows.Add(string.Join('|', Enumerable.Range(0, reader.FieldCount).Select(i => Text(reader.IsDBNull(i) ? null : reader.GetValue(i)))));
            if (!sql.Contains("ORDER BY", StringComparison.OrdinalIgnoreCase)) rows.Sort(StringComparer.Ordinal);
            return names + "\n" + string.Join('\n', rows);
        }
        catch (PostgresException e) { return $"ERROR {e.SqlState}"; }
    }

    private static string Text(object? value) => value switch
    {
        null => "NULL",
        string s => s,
        bool b => b ? "t" : "f",
        char c => c.ToString(),
        DateTime t => t.ToUniversalTime().ToString("yyyy-MM-dd HH:mm:ss.ffffff", CultureInfo.InvariantCulture),
        DateTimeOffset o => o.UtcDateTime.ToString("yyyy-MM-dd HH:mm:ss.ffffff", CultureInfo.InvariantCulture),
        Array a => "{" + string.Join(',', a.Cast<object?>().Select(Text)) + "}",
        IConvertible n when value is double or float or decimal or long or int or short or uint or byte => Convert.ToDouble(n, CultureInfo.InvariantCulture).ToString("R", CultureInfo.InvariantCulture),
        _ => Convert.ToString(value, CultureInfo.InvariantCulture) ?? "",
    };
}
