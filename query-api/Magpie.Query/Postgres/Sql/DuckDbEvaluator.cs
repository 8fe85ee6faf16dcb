using System.Globalization;
using System.Numerics;
using System.Text.Json;
using DuckDB.NET.Data;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// SQL the index alone can't answer exactly — expressions (<c>CASE</c>, arithmetic, <c>coalesce</c>, <c>lower</c>), <c>LIKE</c>,
/// several grouping keys, <c>HAVING</c>, <c>DISTINCT</c>, <c>count(DISTINCT …)</c>, <c>percentile_cont</c>, window functions —
/// is evaluated by DuckDB, a maintained SQL engine whose parser is PostgreSQL's grammar, set to PostgreSQL's semantics where the
/// two differ (NULLs last ascending and first descending, integer division, UTC). Each index the statement reads becomes a
/// table of the same name and columns, filled from one snapshot of the index (a field a document lacks is NULL, as SQL has it);
/// then the statement runs as written. Every input has a limit: rows read per table, result rows, DuckDB's memory and threads.
/// </summary>
public sealed class DuckDbEvaluator(IndexSchemas schemas, SqlRunner rows)
{
    /// <summary>Rows read from one index (past it the statement is refused, 54000: filter with RQL, or ask the index's own SQL).</summary>
    public const int MaxTableRows = 2_000_000;

    /// <summary>Rows a statement evaluated here may answer (they are held until sent).</summary>
    public const int MaxResultRows = 100_000;

    /// <summary>Functions whose DuckDB answer is DuckDB's, not this session's (DuckDB's user, database, version): refused rather than answered wrongly.</summary>
    private static readonly string[] SessionFunctions =
        ["current_database", "current_catalog", "current_schema", "version", "current_setting", "pg_backend_pid", "inet_server"];

    /// <summary>The same values written without parentheses (SQL's special names): DuckDB reads them as column names it answers itself.</summary>
    private static readonly HashSet<string> SessionNames = new(StringComparer.OrdinalIgnoreCase)
        { "current_user", "session_user", "current_role", "current_catalog", "current_schema", "user" };

    public async Task<PgOutcome> RunAsync(string sql, CancellationToken ct)
    {
        using var connection = new DuckDBConnection("DataSource=:memory:");
        await connection.OpenAsync(ct);
        // No files, no extensions, no settings changed by a statement: the engine sees only the tables filled here.
        foreach (var setting in (string[])["SET default_null_order = 'nulls_last_on_asc_first_on_desc'", "SET integer_division = true",
                     "SET TimeZone = 'UTC'", "SET threads = 2", "SET memory_limit = '1GB'", "SET enable_external_access = false",
                     "SET autoinstall_known_extensions = false", "SET autoload_known_extensions = false", "SET lock_configuration = true"])
            Execute(connection, setting);
        var tree = TreeOf(connection, sql);
        var functions = FunctionsOf(tree);
        if (SessionFunctions.FirstOrDefault(f => functions.Any(n => n.StartsWith(f, StringComparison.Ordinal))) is { } session)
            throw new PgException(PgException.FeatureNotSupported, $"{session}() is not answered by Magpie's endpoint yet");
        var tables = new List<(string Table, string Index, IReadOnlyList<PgColumn> Columns)>();
        foreach (var table in TablesOf(tree))
        {
            var index = schemas.Resolve(table)!;
            tables.Add((table, index, await schemas.ColumnsAsync(index, ct)));
        }
        // `user` is a column where a table has one; otherwise it is the session's, which DuckDB would answer with its own.
        if (ColumnNamesOf(tree).FirstOrDefault(n => SessionNames.Contains(n) && !tables.Any(t => t.Columns.Any(c => string.Equals(c.Name, n, StringComparison.OrdinalIgnoreCase)))) is { } name)
            throw new PgException(PgException.FeatureNotSupported, $"{name} is not answered by Magpie's endpoint yet");
        foreach (var (table, index, columns) in tables) await LoadAsync(connection, table, index, columns, ct);
        try
        {
            using var command = connection.CreateCommand();
            command.CommandText = sql;
            // A statement timeout or a client's cancel interrupts DuckDB itself, not only the wait for it.
            using var interrupt = ct.Register(command.Cancel);
            using var reader = await command.ExecuteReaderAsync(ct);
            var columns = Enumerable.Range(0, reader.FieldCount).Select(i => new PgColumn(reader.GetName(i), TypeOf(reader.GetDataTypeName(i)))).ToList();
            var result = new List<object?[]>();
            while (await reader.ReadAsync(ct))
            {
                if (result.Count == MaxResultRows)
                    throw new PgException(PgException.ProgramLimitExceeded, $"the statement answers more than {MaxResultRows:N0} rows: add a LIMIT");
                var row = new object?[columns.Count];
                for (var i = 0; i < row.Length; i++) row[i] = reader.IsDBNull(i) ? null : ValueOf(reader.GetValue(i), columns[i].Type);
                result.Add(row);
            }
            return PgRows.Of(columns, result);
        }
        catch (DuckDBException e) { throw Problem(e); }
    }

    private static void Execute(DuckDBConnection connection, string sql)
    {
        using var command = connection.CreateCommand();
        command.CommandText = sql;
        command.ExecuteNonQuery();
    }

    /// <summary>The statement's syntax tree, as DuckDB's parser (PostgreSQL's grammar) reads it; a statement it can't parse is a syntax error.</summary>
    private static JsonElement TreeOf(DuckDBConnection connection, string sql)
    {
        using var command = connection.CreateCommand();
        // A string literal (its quotes doubled): json_serialize_sql takes no parameter.
        command.CommandText = "SELECT json_serialize_sql('" + sql.Replace("'", "''") + "')";
        var tree = JsonDocument.Parse((string)command.ExecuteScalar()!).RootElement.Clone();
        if (tree.TryGetProperty("error", out var error) && error.ValueKind == JsonValueKind.True)
            throw new PgException(PgException.SyntaxError, tree.TryGetProperty("error_message", out var m) ? m.GetString()! : "syntax error");
        return tree;
    }

    /// <summary>The Magpie indexes a statement reads: its base tables (not its CTEs, not a catalog's) that name an index.</summary>
    private IReadOnlyList<string> TablesOf(JsonElement tree)
    {
        var tables = new HashSet<string>(StringComparer.Ordinal);
        var ctes = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        foreach (var node in Nodes(tree))
        {
            if (node.TryGetProperty("cte_map", out var map) && map.TryGetProperty("map", out var entries) && entries.ValueKind == JsonValueKind.Array)
                foreach (var entry in entries.EnumerateArray())
                    if (entry.TryGetProperty("key", out var key) && key.ValueKind == JsonValueKind.String) ctes.Add(key.GetString()!);
            if (node.TryGetProperty("type", out var type) && type.ValueKind == JsonValueKind.String && type.GetString() == "BASE_TABLE"
                && node.TryGetProperty("schema_name", out var schema) && schema.GetString() is "" or "public"
                && node.GetProperty("table_name").GetString() is { } name)
                tables.Add(name);
        }
        return [.. tables.Where(t => !ctes.Contains(t) && schemas.Resolve(t) is not null)];
    }

    private static IEnumerable<string> ColumnNamesOf(JsonElement tree) =>
        Nodes(tree).Where(n => n.TryGetProperty("class", out var c) && c.GetString() == "COLUMN_REF" && n.TryGetProperty("column_names", out var names) && names.GetArrayLength() == 1)
            .Select(n => n.GetProperty("column_names")[0].GetString()!);

    private static HashSet<string> FunctionsOf(JsonElement tree) =>
        [.. Nodes(tree).Where(n => n.TryGetProperty("class", out var c) && c.GetString() == "FUNCTION")
            .Select(n => n.GetProperty("function_name").GetString()!.ToLowerInvariant())];

    private static IEnumerable<JsonElement> Nodes(JsonElement e)
    {
        var stack = new Stack<JsonElement>([e]);
        while (stack.Count > 0)
        {
            var node = stack.Pop();
            if (node.ValueKind == JsonValueKind.Object)
            {
                yield return node;
                foreach (var p in node.EnumerateObject()) stack.Push(p.Value);
            }
            else if (node.ValueKind == JsonValueKind.Array)
                foreach (var item in node.EnumerateArray()) stack.Push(item);
        }
    }

    /// <summary>The table named as the statement names it, with the index's columns, filled with every entry of the index.</summary>
    private async Task LoadAsync(DuckDBConnection connection, string table, string index, IReadOnlyList<PgColumn> columns, CancellationToken ct)
    {
        Execute(connection, $"CREATE TABLE {Quote(table)} ({string.Join(", ", columns.Select(c => $"{Quote(c.Name)} {DuckType(c.Type)}"))})");
        if (columns.Count == 0) return;
        var rql = $"from index {SqlToRql.Quote(index)} select {string.Join(", ", columns.Select((c, i) => $"{SqlToRql.Quote(c.Name)} as {SqlToRql.Quote("c" + i)}"))}";
        var types = columns.Select(c => c.Type).ToList();
        using var appender = connection.CreateAppender(table);
        var count = 0;
        await foreach (var values in rows.StreamAsync(rql, types, [], ct))
        {
            if (++count > MaxTableRows)
                throw new PgException(PgException.ProgramLimitExceeded, $"\"{SqlText.Shorten(table)}\" holds more than {MaxTableRows:N0} rows, the most a statement evaluated outside the index reads");
            var row = appender.CreateRow();
            for (var i = 0; i < values.Length; i++)
            {
                switch (values[i])
                {
                    case null: row.AppendNullValue(); break;
                    case string s: row.AppendValue(s); break;
                    case double d: row.AppendValue(d); break;
                    case long l: row.AppendValue(l); break;
                    case int n: row.AppendValue(n); break;
                    case bool b: row.AppendValue(b); break;
                    case DateTime t: row.AppendValue(DateTime.SpecifyKind(t, DateTimeKind.Utc)); break;
                    default: row.AppendValue(Convert.ToString(values[i], CultureInfo.InvariantCulture)); break;
                }
            }
            row.EndRow();
        }
    }

    private static string Quote(string identifier) => "\"" + identifier.Replace("\"", "\"\"") + "\"";

    private static string DuckType(PgType type) => type switch
    {
        PgType.Int8 => "BIGINT",
        PgType.Int4 => "INTEGER",
        PgType.Float8 => "DOUBLE",
        PgType.Bool => "BOOLEAN",
        PgType.TimestampTz => "TIMESTAMPTZ",
        _ => "VARCHAR",
    };

    /// <summary>A DuckDB result column as the PostgreSQL type a client reads; exact decimals and 128-bit integers as float8 and int8 where they fit.</summary>
    private static PgType TypeOf(string duckType) => duckType.ToLowerInvariant() switch
    {
        "bigint" or "hugeint" or "ubigint" or "uinteger" => PgType.Int8,
        "integer" or "smallint" or "tinyint" or "usmallint" or "utinyint" => PgType.Int4,
        "double" or "float" or "real" or "decimal" => PgType.Float8,
        "boolean" => PgType.Bool,
        "timestamptz" or "timestamp" or "timestamp with time zone" or "date" => PgType.TimestampTz,
        _ => PgType.Text,
    };

    private static object? ValueOf(object value, PgType type) => (value, type) switch
    {
        (BigInteger b, PgType.Int8) => b >= long.MinValue && b <= long.MaxValue ? (long)b
            : throw new PgException("22003", "bigint out of range"),
        (DateTimeOffset o, _) => o.UtcDateTime,
        (DateTime t, _) => DateTime.SpecifyKind(t, DateTimeKind.Utc),
        (DateOnly d, _) => d.ToDateTime(TimeOnly.MinValue, DateTimeKind.Utc),
        (decimal m, _) => (double)m,
        (_, PgType.Text) => Convert.ToString(value, CultureInfo.InvariantCulture),
        _ => value,
    };

    /// <summary>DuckDB's error as the SQLSTATE PostgreSQL gives for the same mistake.</summary>
    private static PgException Problem(DuckDBException e)
    {
        var message = e.Message.Split('\n')[0];
        var state = message switch
        {
            _ when message.StartsWith("Parser Error", StringComparison.Ordinal) => PgException.SyntaxError,
            _ when message.StartsWith("Catalog Error: Table", StringComparison.Ordinal) => PgException.UndefinedTable,
            _ when message.StartsWith("Catalog Error: Scalar Function", StringComparison.Ordinal) || message.Contains("No function matches", StringComparison.Ordinal) => PgException.UndefinedFunction,
            _ when message.StartsWith("Binder Error: Referenced column", StringComparison.Ordinal) => PgException.UndefinedColumn,
            _ when message.StartsWith("Conversion Error", StringComparison.Ordinal) => PgException.InvalidTextRepresentation,
            _ when message.StartsWith("Out of Memory", StringComparison.Ordinal) => "53200",
            _ when message.StartsWith("Binder Error", StringComparison.Ordinal) => "42803",
            _ => PgException.FeatureNotSupported,
        };
        return new PgException(state, message);
    }
}
