using System.Text.RegularExpressions;

namespace Magpie.Query.Postgres;

/// <summary>
/// What drivers and Grafana ask about the server rather than the data: version, settings (SHOW, current_setting),
/// the TimescaleDB probe, and information_schema's schemata, tables (one per index, schema <c>public</c>) and columns
/// (an index's fields). Grafana's statements are recognised by what they read, not evaluated: their WHERE clauses use
/// PostgreSQL functions (quote_ident, parse_ident, generate_series) that only select schema <c>public</c> here anyway.
/// </summary>
public sealed partial class PgCatalog(IndexSchemas schemas)
{
    public const string Version = "16.0", VersionNum = "160000";

    public static readonly IReadOnlyDictionary<string, string> Settings = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase)
    {
        ["server_version"] = Version, ["server_version_num"] = VersionNum, ["server_encoding"] = "UTF8", ["client_encoding"] = "UTF8",
        ["search_path"] = "\"$user\", public", ["timezone"] = "UTC", ["datestyle"] = "ISO, MDY", ["integer_datetimes"] = "on",
        ["standard_conforming_strings"] = "on", ["transaction_isolation"] = "read committed", ["max_identifier_length"] = "63",
        ["default_transaction_read_only"] = "on", ["application_name"] = "",
    };

    /// <summary>The answer to a catalog statement, or null when <paramref name="sql"/> is not one.</summary>
    public async Task<PgOutcome?> AnswerAsync(string sql, CancellationToken ct)
    {
        if (ShowStatement().Match(sql) is { Success: true } show)
        {
            var name = show.Groups[1].Value.Trim('"');
            if (!Settings.TryGetValue(name, out var value)) throw new PgException(PgException.UndefinedObject, $"unrecognized configuration parameter \"{SqlText.Shorten(name)}\"");
            return PgRows.Of([new PgColumn(name.ToLowerInvariant(), PgType.Text)], [[value]]);
        }
        if (SleepFunction().Match(sql) is { Success: true } sleep)
        {
            // PostgreSQL's pg_sleep: what clients and scripts use to try cancel requests and statement timeouts.
            var seconds = double.Parse(sleep.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
            await Task.Delay(TimeSpan.FromSeconds(Math.Min(seconds, 3600)), ct);
            return PgRows.Of([new PgColumn(Alias(sql) ?? "pg_sleep", PgType.Text)], [[""]]);
        }
        if (VersionFunction().IsMatch(sql))
            return PgRows.Of([new PgColumn(Alias(sql) ?? "version", PgType.Text)], [[$"PostgreSQL {Version} (Magpie: RQL and a SQL subset over its indexes)"]]);
        if (CurrentSetting().Match(sql) is { Success: true } setting && !sql.Contains("information_schema", StringComparison.OrdinalIgnoreCase))
        {
            var name = setting.Groups[1].Value;
            if (!Settings.TryGetValue(name, out var value)) throw new PgException(PgException.UndefinedObject, $"unrecognized configuration parameter \"{SqlText.Shorten(name)}\"");
            // Grafana: current_setting('server_version_num')::int/100 as version
            if (IntDivision().Match(sql) is { Success: true } div && long.TryParse(value, out var number))
                return PgRows.Of([new PgColumn(Alias(sql) ?? "current_setting", PgType.Int4)], [[number / long.Parse(div.Groups[1].Value)]]);
            return PgRows.Of([new PgColumn(Alias(sql) ?? "current_setting", PgType.Text)], [[value]]);
        }
        if (FromPgExtension().IsMatch(sql))   // no TimescaleDB: no rows
            return PgRows.Of([.. SelectedNames(sql, "extversion").Select(n => new PgColumn(n, PgType.Text))], []);
        if (FromInformationSchema().Match(sql) is not { Success: true } from) return null;

        var schemaAsked = SchemaLiteral().Match(sql) is { Success: true } s ? s.Groups[1].Value.Trim('"') : null;
        var inPublic = schemaAsked is null || schemaAsked == "public";
        switch (from.Groups[1].Value.ToLowerInvariant())
        {
            case "schemata":
                return Rows(sql, "schema_name", [["public"]]);
            case "tables":
                return Rows(sql, "table_name", inPublic ? schemas.Tables.Select(t => new[] { Ident(sql, "table_name", t) }).ToList() : []);
            default:
                var table = TableLiteral().Match(sql) is { Success: true } t ? Unquote(t.Groups[1].Value.Replace("''", "'")) : null;
                var rows = new List<string[]>();
                foreach (var index in table is null ? schemas.Tables : [.. new[] { schemas.Resolve(table) }.OfType<string>()])
                    foreach (var c in await schemas.ColumnsAsync(index, ct))
                        rows.Add([Ident(sql, "column_name", c.Name), IndexSchemas.DataType(c.Type), index]);
                return inPublic ? RowsOfColumns(sql, rows) : RowsOfColumns(sql, []);
        }
    }

    /// <summary>The select list's output names (aliases, else the column read), for a result with one value per row.</summary>
    private static PgRows Rows(string sql, string source, List<string[]> values)
    {
        var names = SelectedNames(sql, source);
        return PgRows.Of([.. names.Select(n => new PgColumn(n, PgType.Text))], values.Select(v => names.Select(_ => (object?)v[0]).ToArray()));
    }

    /// <summary>information_schema.columns: each selected item is the column name, its type, or its table.</summary>
    private static PgRows RowsOfColumns(string sql, List<string[]> rows)
    {
        var items = SelectItems(sql);
        int Source(string item) => item.Contains("data_type", StringComparison.OrdinalIgnoreCase) || item.Contains("udt_name", StringComparison.OrdinalIgnoreCase) ? 1
            : item.Contains("table_name", StringComparison.OrdinalIgnoreCase) ? 2 : 0;
        var columns = items.Select(i => new PgColumn(NameOf(i), PgType.Text)).ToList();
        return PgRows.Of(columns, rows.Select(r => items.Select(i => (object?)r[Source(i)]).ToArray()));
    }

    private static List<string> SelectedNames(string sql, string fallback)
    {
        var items = SelectItems(sql);
        return items.Count == 0 ? [fallback] : items.Select(NameOf).ToList();
    }

    /// <summary>The text of each top-level item between SELECT and the first top-level FROM.</summary>
    private static List<string> SelectItems(string sql)
    {
        var start = sql.IndexOf("select", StringComparison.OrdinalIgnoreCase) + 6;
        var items = new List<string>();
        var depth = 0;
        var from = start;
        var quoted = '\0';
        for (var i = start; i < sql.Length; i++)
        {
            var c = sql[i];
            if (quoted != '\0') { if (c == quoted) quoted = '\0'; continue; }
            if (c is '\'' or '"') { quoted = c; continue; }
            if (c == '(') depth++;
            else if (c == ')') depth--;
            else if (depth == 0 && c == ',') { items.Add(sql[from..i]); from = i + 1; }
            else if (depth == 0 && (i == start || !char.IsLetterOrDigit(sql[i - 1])) && string.Compare(sql, i, "from", 0, 4, StringComparison.OrdinalIgnoreCase) == 0
                     && (i + 4 >= sql.Length || !char.IsLetterOrDigit(sql[i + 4])))
            {
                items.Add(sql[from..i]);
                return items.Select(x => x.Trim()).Where(x => x.Length > 0).ToList();
            }
        }
        items.Add(sql[from..]);   // no FROM: the items run to the end
        return items.Select(x => x.Trim()).Where(x => x.Length > 0).ToList();
    }

    private static string NameOf(string item)
    {
        if (AliasOf().Match(item) is { Success: true } m) return m.Groups[1].Success ? m.Groups[1].Value : m.Groups[2].Value.ToLowerInvariant();
        var last = item.Split(['.', ' ', '(', ')'], StringSplitOptions.RemoveEmptyEntries).LastOrDefault() ?? item;
        return last.Trim('"').ToLowerInvariant();
    }

    private static string? Alias(string sql) => SelectItems(sql) is [var only] && AliasOf().IsMatch(only) ? NameOf(only) : null;

    /// <summary>A name as the statement asked for it: quote_ident(x) quotes what needs quoting, as PostgreSQL does.</summary>
    private static string Ident(string sql, string column, string name) =>
        sql.Contains($"quote_ident({column})", StringComparison.OrdinalIgnoreCase) && !PlainIdentifier().IsMatch(name) ? "\"" + name.Replace("\"", "\"\"") + "\"" : name;

    private static string Unquote(string name) => name.Length > 1 && name[0] == '"' && name[^1] == '"' ? name[1..^1].Replace("\"\"", "\"") : name;

    [GeneratedRegex(@"^\s*show\s+([A-Za-z_.""]+)\s*$", RegexOptions.IgnoreCase)]
    private static partial Regex ShowStatement();

    [GeneratedRegex(@"^\s*select\s+(?:pg_catalog\.)?pg_sleep\(\s*(\d+(?:\.\d+)?)\s*\)", RegexOptions.IgnoreCase)]
    private static partial Regex SleepFunction();

    [GeneratedRegex(@"^\s*select\s+(pg_catalog\.)?version\(\)", RegexOptions.IgnoreCase)]
    private static partial Regex VersionFunction();

    [GeneratedRegex(@"current_setting\('([A-Za-z_]+)'\)", RegexOptions.IgnoreCase)]
    private static partial Regex CurrentSetting();

    [GeneratedRegex(@"::\s*int[48]?\s*/\s*(\d+)", RegexOptions.IgnoreCase)]
    private static partial Regex IntDivision();

    [GeneratedRegex(@"\bfrom\s+(pg_catalog\.)?pg_extension\b", RegexOptions.IgnoreCase)]
    private static partial Regex FromPgExtension();

    [GeneratedRegex(@"\bfrom\s+information_schema\.(schemata|tables|columns)\b", RegexOptions.IgnoreCase)]
    private static partial Regex FromInformationSchema();

    [GeneratedRegex(@"table_schema\)?\s*=\s*'([^']*)'", RegexOptions.IgnoreCase)]
    private static partial Regex SchemaLiteral();

    [GeneratedRegex(@"(?:parse_ident\(|table_name\)?\s*=\s*)'((?:[^']|'')*)'", RegexOptions.IgnoreCase)]
    private static partial Regex TableLiteral();

    [GeneratedRegex(@"\bas\s+(?:""([^""]+)""|([A-Za-z_][A-Za-z0-9_]*))\s*$", RegexOptions.IgnoreCase)]
    private static partial Regex AliasOf();

    [GeneratedRegex(@"^[a-z_][a-z0-9_$]*$")]
    private static partial Regex PlainIdentifier();
}
