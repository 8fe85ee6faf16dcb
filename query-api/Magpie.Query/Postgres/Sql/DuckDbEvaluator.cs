using Magpie.Query.Rql;
using System.Globalization;
using System.Numerics;
using System.Text;
using System.Text.Json.Nodes;
using DuckDB.NET.Data;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// SQL the index alone can't answer exactly — expressions (<c>CASE</c>, arithmetic, <c>coalesce</c>, <c>lower</c>), <c>LIKE</c>,
/// several grouping keys, <c>HAVING</c>, <c>DISTINCT</c>, <c>count(DISTINCT …)</c>, <c>percentile_cont</c>, window functions —
/// is evaluated by DuckDB, a maintained SQL engine whose parser is PostgreSQL's grammar, set to PostgreSQL's semantics where the
/// two differ (NULLs last ascending and first descending, integer division, UTC). Each index the statement reads becomes a
/// table of the same name and columns, filled from one snapshot of the index (a field a document lacks is NULL, as SQL has it);
/// then the statement runs as PostgreSQL means it (<see cref="PgDialect"/>). A statement that reads the catalogs also sees the
/// session's rows of pg_class, pg_attribute, information_schema and the settings (<see cref="PgSessionCatalog"/>). Every input
/// has a limit: rows read per table, result rows, DuckDB's memory and threads.
/// </summary>
public sealed class DuckDbEvaluator(IndexSchemas schemas, SqlRunner rows, DuckDbDatabase database)
{
    /// <summary>Rows read from one index (past it the statement is refused, 54000: filter with RQL, or ask the index's own SQL).</summary>
    public const int MaxTableRows = 2_000_000;

    /// <summary>Rows a statement evaluated here may answer (they are held until sent).</summary>
    public const int MaxResultRows = 100_000;

    public async Task<PgOutcome> RunAsync(string sql, PgSessionInfo session, CancellationToken ct)
    {
        var text = PgDialect.Prepare(sql, session);
        using var connection = database.Open();
        var tree = TreeOf(connection, text);
        if (PgDialect.Rewrite(text, tree) is { } rewritten) text = SqlOf(connection, rewritten);
        var tables = new List<(string Table, string Index, IReadOnlyList<PgColumn> Columns)>();
        foreach (var table in TablesOf(tree))
        {
            var index = schemas.Resolve(table)!;
            tables.Add((table, index, await schemas.ColumnsAsync(index, ct)));
        }
        if (PgDialect.QualifyShadowedColumns(tree, t => tables.FirstOrDefault(x => x.Table == t) is { Columns: { } c } ? [.. c.Select(x => x.Name)] : null))
            text = SqlOf(connection, tree);
        PgSessionCatalog.WriteFunctions(connection, session);
        if (PgDialect.ReadsCatalog(sql))
        {
            var all = new List<(string, IReadOnlyList<PgColumn>)>();
            foreach (var index in schemas.Tables) all.Add((index, await schemas.ColumnsAsync(index, ct)));
            PgSessionCatalog.Write(connection, session, all);
        }
        foreach (var (table, index, columns) in tables)
        {
            var (needed, where) = ReadPlanOf(tree, table, connection);
            await LoadAsync(connection, table, index, columns, needed, where is null ? null : SqlRunner.Condition(where, columns), ct);
        }
        try
        {
            using var command = connection.CreateCommand();
            command.CommandText = text;
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

    /// <summary>The statement's syntax tree, as DuckDB's parser (PostgreSQL's grammar) reads it; a statement it can't parse is a syntax error.</summary>
    private static JsonNode TreeOf(DuckDBConnection connection, string sql)
    {
        using var command = connection.CreateCommand();
        // A string literal (its quotes doubled): json_serialize_sql takes no parameter.
        command.CommandText = "SELECT json_serialize_sql('" + sql.Replace("'", "''") + "')";
        var tree = JsonNode.Parse((string)command.ExecuteScalar()!)!;
        if (tree["error"]?.GetValue<bool>() == true)
            throw new PgException(PgException.SyntaxError, PgDialect.Text(tree["error_message"]) ?? "syntax error");
        if (tree["statements"] is not JsonArray { Count: 1 })
            throw new PgException(PgException.SyntaxError, "cannot insert multiple commands into a prepared statement");
        return tree;
    }

    /// <summary>A syntax tree back to the statement's text.</summary>
    private static string SqlOf(DuckDBConnection connection, JsonNode tree)
    {
        using var command = connection.CreateCommand();
        command.CommandText = "SELECT json_deserialize_sql($tree::JSON)";
        command.Parameters.Add(new DuckDBParameter("tree", tree.ToJsonString()));
        return (string)command.ExecuteScalar()!;
    }

    /// <summary>
    /// The Magpie indexes a statement reads: its base tables (not its CTEs, not a catalog's) that name an index. A pg_ table
    /// that isn't one of Magpie's catalogs is refused: DuckDB would answer it with its own.
    /// </summary>
    private IReadOnlyList<string> TablesOf(JsonNode tree)
    {
        var tables = new HashSet<string>(StringComparer.Ordinal);
        var ctes = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        foreach (var node in PgDialect.Nodes(tree))
        {
            if (node["cte_map"]?["map"] is JsonArray entries)
                foreach (var entry in entries)
                    if (PgDialect.Text(entry?["key"]) is { } key) ctes.Add(key);
            if (PgDialect.Text(node["type"]) == "BASE_TABLE" && PgDialect.Text(node["table_name"]) is { } name
                && PgDialect.Text(node["schema_name"]) is "" or "public" && PgDialect.Text(node["catalog_name"]) is null or "")
            {
                if (database.IsCatalogTable(name)) continue;
                if (name.StartsWith("pg_", StringComparison.OrdinalIgnoreCase) && schemas.Resolve(name) is null)
                    throw new PgException(PgException.FeatureNotSupported, $"the catalog {SqlText.Shorten(name)} is not served by Magpie's endpoint");
                tables.Add(name);
            }
        }
        return [.. tables.Where(t => !ctes.Contains(t) && schemas.Resolve(t) is not null)];
    }

    /// <summary>
    /// What a statement needs of an index: the columns it names (all of them where it reads a whole row: <c>*</c>, a join, the
    /// table itself as a value), and the part of its WHERE the index answers exactly (each AND-ed term the index's SQL
    /// reads, over a single table), so that only those rows and columns are streamed. DuckDB still applies the whole WHERE.
    /// </summary>
    private static (HashSet<string>? Columns, string? Where) ReadPlanOf(JsonNode tree, string table, DuckDBConnection connection)
    {
        var nodes = PgDialect.Nodes(tree).ToList();
        var names = new HashSet<string>(StringComparer.OrdinalIgnoreCase) { table };
        foreach (var n in nodes.Where(n => PgDialect.Text(n["type"]) == "BASE_TABLE" && PgDialect.Text(n["table_name"]) == table))
            if (PgDialect.Text(n["alias"]) is { Length: > 0 } alias) names.Add(alias);
        var references = nodes.Where(n => PgDialect.Text(n["class"]) == "COLUMN_REF").Select(n => n["column_names"] as JsonArray).OfType<JsonArray>()
            .Select(a => a.Select(PgDialect.Text).OfType<string>().ToList()).ToList();
        HashSet<string>? columns = nodes.Any(n => PgDialect.Text(n["class"]) is "STAR" or "COLUMNS" || PgDialect.Text(n["type"]) == "JOIN")
            || references.Any(r => r.Count == 1 && names.Contains(r[0]))
            ? null : new(references.Where(r => r.Count > 0).Select(r => r[^1]), StringComparer.OrdinalIgnoreCase);

        if (tree["statements"]?[0]?["node"] is not JsonObject select || PgDialect.Text(select["type"]) != "SELECT_NODE"
            || select["cte_map"]?["map"] is JsonArray { Count: > 0 } || PgDialect.Text(select["from_table"]?["type"]) != "BASE_TABLE"
            || select["where_clause"] is not JsonObject where)
            return (columns, null);
        var terms = PgDialect.Text(where["type"]) == "CONJUNCTION_AND" && where["children"] is JsonArray children ? [.. children.OfType<JsonObject>()] : new List<JsonObject> { where };
        var kept = new JsonArray();
        foreach (var term in terms)
        {
            if (PgDialect.Nodes(term).Any(n => PgDialect.Text(n["class"]) is "SUBQUERY" or "WINDOW" or "LAMBDA")) continue;
            var copy = term.DeepClone();
            foreach (var reference in PgDialect.Nodes(copy).Where(n => PgDialect.Text(n["class"]) == "COLUMN_REF"))
                if (reference["column_names"] is JsonArray { Count: 2 } parts && names.Contains(PgDialect.Text(parts[0]) ?? "")) parts.RemoveAt(0);
            kept.Add(copy);
        }
        if (kept.Count == 0) return (columns, null);
        var conjunction = kept.Count == 1 ? kept[0]!.DeepClone()
            : new JsonObject { ["class"] = "CONJUNCTION", ["type"] = "CONJUNCTION_AND", ["alias"] = "", ["query_location"] = ulong.MaxValue, ["children"] = kept };
        return (columns, TermText(connection, conjunction));
    }

    /// <summary>An expression of a syntax tree as SQL text (DuckDB writes it back as the select list of <c>SELECT 1</c>).</summary>
    private static string TermText(DuckDBConnection connection, JsonNode term)
    {
        var tree = TreeOf(connection, "SELECT 1");
        tree["statements"]![0]!["node"]!["select_list"] = new JsonArray(term);
        var text = SqlOf(connection, tree);
        return text.StartsWith("SELECT ", StringComparison.Ordinal) ? text[7..] : text;
    }

    /// <summary>The table named as the statement names it, with the index's columns, filled with every entry of the index.</summary>
    private async Task LoadAsync(DuckDBConnection connection, string table, string index, IReadOnlyList<PgColumn> columns, HashSet<string>? needed,
        RqlExpression? condition, CancellationToken ct)
    {
        DuckDbDatabase.Execute(connection, $"CREATE TEMP TABLE {PgDialect.Quote(table)} ({string.Join(", ", columns.Select(c => $"{PgDialect.Quote(c.Name)} {DuckType(c.Type)}"))})");
        // The columns the statement names are read; the others stay NULL (it never reads them).
        var read = columns.Select((c, i) => (Column: c, Position: i)).Where(c => needed is null || needed.Contains(c.Column.Name)).ToList();
        if (read.Count == 0 && needed is not null) read = columns.Take(1).Select((c, i) => (c, i)).ToList();   // count(*): one column, for the rows
        if (read.Count == 0) return;
        var query = SqlRunner.Projected(RqlQuery.OfIndex(index, condition), read.Select(c => c.Column.Name));
        var types = read.Select(c => c.Column.Type).ToList();
        using var appender = connection.CreateAppender("temp", "main", table);
        var count = 0;
        var full = new object?[columns.Count];
        await foreach (var streamed in rows.StreamAsync(query, types, [], ct))
        {
            if (++count > MaxTableRows)
                throw new PgException(PgException.ProgramLimitExceeded, $"\"{SqlText.Shorten(table)}\" holds more than {MaxTableRows:N0} rows, the most a statement evaluated outside the index reads");
            Array.Clear(full);
            for (var i = 0; i < read.Count; i++) full[read[i].Position] = streamed[i];
            var values = full;
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
        "list" => PgType.TextArray,
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
        (System.Collections.IList list, _) => list,
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
            _ when message.Contains("specifier", StringComparison.Ordinal) && message.Contains("not recognized", StringComparison.Ordinal) => "22023",
            _ when message.StartsWith("Conversion Error", StringComparison.Ordinal) => PgException.InvalidTextRepresentation,
            _ when message.StartsWith("Out of Memory", StringComparison.Ordinal) => "53200",
            _ when message.Contains("unrecognized configuration parameter", StringComparison.Ordinal) => PgException.UndefinedObject,
            _ when message.StartsWith("Binder Error", StringComparison.Ordinal) => "42803",
            _ => PgException.FeatureNotSupported,
        };
        return new PgException(state, message);
    }
}
