namespace Magpie.Tests.Postgres.Grafana;

/// <summary>
/// The conformance suite's statements. Macros are written as Grafana's PostgreSQL data source expands them
/// (pkg/tsdb/grafana-postgresql-datasource/macros.go): <c>$__timeFilter(c)</c> → <c>c BETWEEN 'from' AND 'to'</c> (RFC 3339),
/// <c>$__timeGroup(c,'5m')</c> → <c>floor(extract(epoch from c)/300)*300</c> (+ <c>AS "time"</c> for the alias form),
/// <c>$__timeEpoch(c)</c> → <c>extract(epoch from c) as "time"</c>, <c>$__unixEpochFilter(c)</c> → <c>c &gt;= s AND c &lt;= e</c>,
/// <c>$__unixEpochGroup(c,'1h')</c> → <c>floor((c)/3600)*3600</c>. The query builder's SQL is its toRawSql shape:
/// <c>SELECT aggregate(column) AS "alias", key FROM t WHERE filters GROUP BY key ORDER BY … LIMIT 50</c>.
/// </summary>
public static class GrafanaQueries
{
    private static readonly (string From, string To)[] Ranges =
    [
        ("2026-11-01T06:00:00Z", "2026-11-01T18:00:00Z"),
        ("2026-10-31T00:00:00Z", "2026-11-05T00:00:00Z"),
        ("2026-11-02T00:00:00.5Z", "2026-11-02T01:00:00.123Z"),
    ];

    private static string TimeFilter((string From, string To) r) => $"time BETWEEN '{r.From}' AND '{r.To}'";

    private static long Epoch(string rfc3339) => (long)(DateTime.Parse(rfc3339, System.Globalization.CultureInfo.InvariantCulture, System.Globalization.DateTimeStyles.AdjustToUniversal) - DateTime.UnixEpoch).TotalSeconds;

    private static readonly (string Name, int Seconds)[] Intervals = [("1m", 60), ("5m", 300), ("15m", 900), ("1h", 3600), ("6h", 21600), ("1d", 86400)];

    /// <summary>The query builder's filter operators and what users type into WHERE.</summary>
    public static readonly string[] Filters =
    [
        "host = 'web-01'", "host <> 'web-01'", "host IN ('web-01', 'DB-2')", "host NOT IN ('web-01', 'DB-2')", "host LIKE 'web%'",
        "host ILIKE 'WEB%'", "host NOT LIKE '%-0%'", "status IS NULL", "status IS NOT NULL", "region = 'eu'",
        "region IS DISTINCT FROM 'eu'", "cpu > 50", "cpu >= 99.75", "cpu < 0.5", "cpu BETWEEN 10 AND 20", "requests IS NULL",
        "requests > 900 AND status = 'ok'", "(status = 'error' OR status = 'warn') AND host LIKE 'cache%'", "NOT (region = 'us')",
        "note ILIKE '%timeout%'", "host ~ '^web'", "host ~* 'db'", "lower(status) = 'ok'", "host = ANY(ARRAY['api', 'cache-a'])",
        "time > '2026-11-02T12:00:00.25Z'", "time >= now() - interval '100 years'", "note = ''", "host !~ '-0'",
    ];

    public static IEnumerable<object[]> All => Statements().Select(s => new object[] { s });

    private static IEnumerable<string> Statements()
    {
        // Time series panels: $__timeGroupAlias with one aggregate, over $__timeFilter.
        foreach (var (_, s) in Intervals)
            foreach (var agg in (string[])["avg(cpu)", "max(cpu)", "min(cpu)", "sum(mem)", "count(*)", "count(requests)"])
                foreach (var r in Ranges[..2])
                    yield return $"""SELECT floor(extract(epoch from time)/{s})*{s} AS "time", {agg} AS "value" FROM metrics WHERE {TimeFilter(r)} GROUP BY 1 ORDER BY 1""";
        // Multi-series panels: two keys, the second the series' name.
        foreach (var (_, s) in Intervals[1..])
            foreach (var agg in (string[])["avg(cpu)", "count(*)", "max(requests)"])
                foreach (var key in (string[])["host", "status", "region", "lower(host)"])
                    yield return $"""SELECT floor(extract(epoch from time)/{s})*{s} AS "time", {key} AS metric, {agg} AS "value" FROM metrics WHERE {TimeFilter(Ranges[0])} GROUP BY 1, 2 ORDER BY 1, 2""";
        // $__timeGroup without its alias, $__timeFrom()/$__timeTo(), and columns of epoch seconds ($__unixEpoch…).
        foreach (var (_, s) in Intervals)
        {
            var (from, to) = Ranges[1];
            yield return $"""SELECT floor(extract(epoch from time)/{s})*{s}, avg(cpu) AS cpu, max(mem) AS mem FROM metrics WHERE time >= '{from}' AND time <= '{to}' GROUP BY 1 ORDER BY 1""";
            yield return $"""SELECT floor((epoch)/{s})*{s} AS "time", avg(cpu) FROM metrics WHERE epoch >= {Epoch(Ranges[0].From)} AND epoch <= {Epoch(Ranges[0].To)} GROUP BY 1 ORDER BY 1""";
            yield return $"""SELECT floor((epoch)/{s})*{s} AS "time", host AS metric, count(*) FROM metrics WHERE epoch >= {Epoch(Ranges[0].From)} AND epoch <= {Epoch(Ranges[0].To)} GROUP BY 1, 2 ORDER BY 1, 2""";
        }
        foreach (var r in Ranges)
        {
            yield return $"""SELECT extract(epoch from time) as "time", cpu FROM metrics WHERE {TimeFilter(r)} ORDER BY 1 LIMIT 50""";
            yield return $"""SELECT time AS "time", cpu AS "value", host AS metric FROM metrics WHERE {TimeFilter(r)} ORDER BY 1 LIMIT 100""";
            yield return $"""SELECT time AS "time", cpu, mem FROM metrics WHERE {TimeFilter(r)} ORDER BY 1 DESC LIMIT 10""";
            yield return $"""SELECT count(*) FROM metrics WHERE time >= '{r.From}' AND time < '{r.To}'""";
        }
        // Table panels: the latest rows that pass a filter, in and out of a time range.
        foreach (var filter in Filters)
        {
            yield return $"""SELECT time, host, cpu FROM metrics WHERE {filter} ORDER BY time DESC LIMIT 20""";
            yield return $"""SELECT time, host, status, region, note FROM metrics WHERE {TimeFilter(Ranges[2])} AND {filter} ORDER BY time LIMIT 10""";
            yield return $"""SELECT * FROM metrics WHERE {filter} ORDER BY time LIMIT 5""";
        }
        // Stat panels per filter, and the query builder's GROUP BY per key.
        foreach (var filter in Filters)
        {
            yield return $"""SELECT count(*), count(DISTINCT host), max(cpu), min(time), max(time), sum(requests) FROM metrics WHERE {filter}""";
            yield return $"""SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu) AS median, percentile_disc(0.9) WITHIN GROUP (ORDER BY cpu) AS p90 FROM metrics WHERE {filter}""";
            foreach (var key in (string[])["host", "status", "region"])
                yield return $"""SELECT avg(cpu) AS "cpu", count(*) AS "count", {key} FROM metrics WHERE {TimeFilter(Ranges[1])} AND {filter} GROUP BY {key} ORDER BY {key} LIMIT 50""";
        }
        // Template variables.
        foreach (var column in (string[])["host", "status", "region", "note"])
        {
            yield return $"SELECT DISTINCT {column} FROM metrics ORDER BY 1";
            yield return $"SELECT DISTINCT {column} AS __text, {column} AS __value FROM metrics WHERE {column} IS NOT NULL ORDER BY 1";
            yield return $"SELECT {column} FROM metrics GROUP BY {column} ORDER BY {column} DESC";
        }
        yield return "SELECT DISTINCT region FROM metrics WHERE host IN ('web-01', 'Web-03') ORDER BY 1";
        yield return "SELECT DISTINCT host FROM metrics WHERE region = ANY(ARRAY['eu', 'EU']) ORDER BY 1";
        // Latest value per series, HAVING, CASE, FILTER, window functions, subqueries: what panels compute.
        string[] computed =
        [
            "SELECT DISTINCT ON (host) host, time, cpu FROM metrics ORDER BY host, time DESC",
            "SELECT host, max(time) AS last_seen FROM metrics GROUP BY 1 ORDER BY 1",
            "SELECT host, cpu FROM (SELECT host, cpu, row_number() OVER (PARTITION BY host ORDER BY time DESC) AS rn FROM metrics) x WHERE rn = 1 ORDER BY host",
            "SELECT host, count(*) FROM metrics GROUP BY host HAVING count(*) > 2500 ORDER BY 2 DESC, 1",
            "SELECT host, avg(cpu) FROM metrics GROUP BY host HAVING avg(cpu) > 50 ORDER BY 1",
            "SELECT CASE WHEN cpu >= 90 THEN 'critical' WHEN cpu >= 70 THEN 'warning' ELSE 'normal' END AS level, count(*) FROM metrics GROUP BY 1 ORDER BY 1",
            "SELECT count(*) FILTER (WHERE status = 'error') AS errors, count(*) FILTER (WHERE status IS NULL) AS unknown, count(*) AS total FROM metrics",
            "SELECT sum(CASE WHEN lower(status) = 'ok' THEN 1 ELSE 0 END) AS ok, sum(CASE WHEN status IS NULL THEN 1 ELSE 0 END) AS missing FROM metrics",
            "SELECT host, round(avg(cpu)) AS mean, round(stddev_samp(cpu) * 1000) AS sd FROM metrics GROUP BY 1 ORDER BY 1",
            // A select item named as a column: elsewhere in the select list, WHERE and GROUP BY the name is the column.
            "SELECT host, round(avg(cpu)) AS cpu, round(stddev_samp(cpu) * 1000) AS sd FROM metrics GROUP BY 1 ORDER BY 1",
            "SELECT cpu * 2 AS cpu, cpu + 1 AS next FROM metrics WHERE cpu > 99 ORDER BY time LIMIT 5",
            "SELECT host AS status, count(*) FROM metrics GROUP BY status ORDER BY 1, 2",
            "SELECT lower(host) AS host, count(*) FROM metrics m WHERE host LIKE 'Web%' GROUP BY 1 ORDER BY 1",
            "SELECT coalesce(region, 'none') AS region, count(*) FROM metrics GROUP BY 1 ORDER BY 1",
            "SELECT upper(host) AS h, count(*) FROM metrics GROUP BY 1 ORDER BY 1",
            "SELECT date_trunc('hour', time) AS \"time\", count(*) FROM metrics WHERE time < '2026-11-01T12:00:00Z' GROUP BY 1 ORDER BY 1",
            "SELECT date_trunc('day', time), host, max(cpu) FROM metrics GROUP BY 1, 2 ORDER BY 1, 2",
            "SELECT date_trunc('minute', time) AS m, count(*) FROM metrics WHERE time < '2026-11-01T00:30:00Z' GROUP BY 1 ORDER BY 1",
            "SELECT time, cpu, cpu - lag(cpu) OVER (ORDER BY time) AS delta FROM metrics WHERE host = 'api' ORDER BY time LIMIT 20",
            "SELECT time, avg(cpu) OVER (ORDER BY time ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS moving FROM metrics WHERE host = 'db-1' ORDER BY time LIMIT 20",
            "SELECT host, rank() OVER (ORDER BY count(*) DESC) FROM metrics GROUP BY host ORDER BY 2, 1",
            "SELECT count(*) FROM (SELECT DISTINCT host, status FROM metrics) d",
            "SELECT status, count(*) FROM metrics WHERE host IN (SELECT host FROM metrics GROUP BY host HAVING max(cpu) = 100) GROUP BY 1 ORDER BY 1",
            "WITH recent AS (SELECT * FROM metrics WHERE time > '2026-11-03T00:00:00Z') SELECT host, count(*), min(time) FROM recent GROUP BY 1 ORDER BY 1",
            "SELECT min(time), max(time), count(*) FROM metrics",
            "SELECT time FROM metrics ORDER BY time DESC LIMIT 3",
            "SELECT time FROM metrics WHERE time >= '2026-11-01T00:00:13Z' AND time < '2026-11-01T00:01:00Z' ORDER BY time",
            "SELECT count(*) FROM metrics WHERE time = '2026-11-01T00:00:13.5Z'",
            "SELECT host, count(status), count(region), count(note), count(requests) FROM metrics GROUP BY 1 ORDER BY 1",
            "SELECT min(host), max(host), min(status), max(status), min(note), max(note) FROM metrics",
            "SELECT region, status, count(*) FROM metrics GROUP BY 1, 2 ORDER BY 1, 2",
            "SELECT region, status, count(*) FROM metrics GROUP BY 1, 2 ORDER BY 1 DESC, 2 DESC",
            "SELECT region FROM metrics ORDER BY region NULLS FIRST, time LIMIT 5",
            "SELECT status FROM metrics ORDER BY status DESC NULLS LAST, time LIMIT 5",
            "SELECT host, cpu FROM metrics ORDER BY cpu DESC, time LIMIT 10",
            "SELECT host, cpu * 2 + 1, mem / 1024 FROM metrics ORDER BY time LIMIT 5",
            "SELECT length(note), count(*) FROM metrics GROUP BY 1 ORDER BY 1",
            "SELECT count(*) FROM metrics WHERE note LIKE '%''%'",
            "SELECT 41 + 1",
            "SELECT 7 / 2, -7 / 2, 7 % 3",
            "SELECT 1",
            "SELECT true AND NULL, NULL IS NULL",
            "SELECT host AS \"Host\", cpu AS \"CPU %\" FROM metrics ORDER BY time LIMIT 3",
            "SELECT m.host, m.cpu FROM metrics m WHERE m.cpu > 99.5 ORDER BY m.time LIMIT 5",
            "SELECT host, string_agg(DISTINCT status, ',' ORDER BY status) FROM metrics GROUP BY 1 ORDER BY 1",
            "SELECT count(*) FROM metrics WHERE host = 'nobody'",
            "SELECT host, count(*) FROM metrics WHERE host = 'nobody' GROUP BY 1",
            "SELECT max(cpu) FROM metrics WHERE host = 'nobody'",
            "SELECT * FROM metrics ORDER BY time LIMIT 0",
            "SELECT host FROM metrics ORDER BY time LIMIT 3 OFFSET 19990",
            "SELECT count(*) FROM metrics WHERE cpu IN (0, 100)",
            "SELECT count(*) FROM metrics WHERE NOT (status = 'ok') OR status IS NULL",
            "SELECT count(*) FROM metrics WHERE status NOT IN ('ok', 'OK')",
            "SELECT count(*) FROM metrics WHERE status <> ALL (ARRAY['ok', 'OK'])",
            "SELECT status, count(*) FROM metrics GROUP BY 1 ORDER BY 1 NULLS FIRST",
            "SELECT region, count(*) FROM metrics GROUP BY 1 ORDER BY 1 DESC NULLS LAST",
            "SELECT DISTINCT host FROM metrics WHERE cpu > 99 ORDER BY 1 DESC",
            "SELECT DISTINCT host, status FROM metrics WHERE host LIKE 'web%' ORDER BY 1, 2",
            "SELECT DISTINCT ON (status) status, host FROM metrics ORDER BY status, time",
        ];
        foreach (var sql in computed) yield return sql;
        // Catalogs: what Grafana, psql and generic tools read.
        string[] catalogs =
        [
            """SELECT schema_name AS "name" FROM information_schema.schemata WHERE schema_name NOT IN ('information_schema', 'pg_catalog', 'pg_toast', '_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental') ORDER BY schema_name""",
            """SELECT quote_ident(table_name) AS "table" FROM information_schema.tables WHERE quote_ident(table_schema) = 'public' ORDER BY 1""",
            """SELECT quote_ident(column_name) AS "column", data_type AS "type" FROM information_schema.columns WHERE quote_ident(table_schema) = 'public' AND quote_ident(table_name) = 'metrics'""",
            """SELECT quote_ident(column_name) AS "column", data_type AS "type" FROM information_schema.columns WHERE CASE WHEN array_length(parse_ident('metrics'),1) = 2 THEN quote_ident(table_schema) = (parse_ident('metrics'))[1] AND quote_ident(table_name) = (parse_ident('metrics'))[2] ELSE quote_ident(table_name) = 'metrics' AND table_schema IN (SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1), array_upper(string_to_array(current_setting('search_path'),','),1)) as i, string_to_array(current_setting('search_path'),',') s) END""",
            """SELECT column_name, data_type, ordinal_position, is_nullable, udt_name, numeric_precision, datetime_precision FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position""",
            "SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema = 'public'",
            "SELECT * FROM information_schema.columns WHERE table_name = 'metrics' ORDER BY ordinal_position LIMIT 3",
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'metrics'",
            "SELECT catalog_name, schema_name FROM information_schema.schemata WHERE schema_name = 'public'",
            "SELECT c.relname, c.relkind, c.relnatts FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
            "SELECT a.attname, a.attnum, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'metrics' AND a.attnum > 0 ORDER BY a.attnum",
            "SELECT tablename, schemaname FROM pg_tables WHERE schemaname = 'public'",
            "SELECT oid, typname, typlen, typcategory FROM pg_type WHERE typname IN ('int8', 'text', 'timestamptz', 'float8', 'bool', 'numeric', '_text') ORDER BY oid",
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' ORDER BY 1",
            "SELECT datname, pg_encoding_to_char(encoding), datcollate FROM pg_database WHERE datname = current_database()",
            "SELECT name, setting FROM pg_settings WHERE name IN ('server_encoding', 'DateStyle', 'TimeZone', 'standard_conforming_strings', 'integer_datetimes') ORDER BY 1",
            "SELECT current_database(), current_schema(), current_user, session_user, user",
            "SELECT current_setting('TimeZone'), current_setting('standard_conforming_strings'), current_setting('no_such_setting', true)",
            "SELECT current_setting('no_such_setting')",
            "SHOW TimeZone",
            "SHOW standard_conforming_strings",
            "SELECT quote_ident('metrics'), quote_ident('Metrics'), quote_ident('time'), quote_ident('user'), quote_ident('a b'), quote_ident('x\"y')",
            "SELECT parse_ident('public.metrics'), parse_ident('\"My Table\"')",
            "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'",
            """SELECT n.nspname as "Schema", c.relname as "Name", CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type", pg_catalog.pg_get_userbyid(c.relowner) as "Owner" FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam WHERE c.relkind IN ('r','p','') AND n.nspname <> 'pg_catalog' AND n.nspname !~ '^pg_toast' AND n.nspname <> 'information_schema' AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1,2""",
            "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(metrics)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid)",
            "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a WHERE a.attrelid = (SELECT oid FROM pg_class WHERE relname = 'metrics') AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            "SELECT count(*) FROM pg_catalog.pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname = 'metrics'",
            "SELECT count(*) FROM information_schema.table_constraints WHERE table_name = 'metrics'",
            "SELECT rolname FROM pg_roles WHERE rolname = current_user",
        ];
        foreach (var sql in catalogs) yield return sql;
        // Refused by both, with the same SQLSTATE.
        string[] errors =
        [
            "SELECT nosuch FROM metrics", "SELECT * FROM nosuch", "SELECT count(*) FROM metrics WHERE time > 5", "SELECT count(*) FROM metrics WHERE cpu > 'abc'",
            "SELECT count(*) FROM metrics WHERE host = 5", "SELECT count(*) FROM metrics WHERE time > 'not a date'", "SELECT sum(host) FROM metrics",
            "SELECT host, count(*) FROM metrics", "SELECT date_trunc('fortnight', time) FROM metrics", "SELECT FROM WHERE", "SELECT nosuch_function(cpu) FROM metrics",
        ];
        foreach (var sql in errors) yield return sql;
    }
}
