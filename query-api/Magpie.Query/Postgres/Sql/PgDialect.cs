using System.Text;
using System.Text.Json.Nodes;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// Where PostgreSQL's SQL and DuckDB's read the same text differently, the statement is rewritten to what PostgreSQL means
/// before DuckDB runs it: in the text (schema-qualified catalog names, the C collation, the session's special names) and in
/// the syntax tree (regular-expression matches, a function in FROM named by its alias). What can't be rewritten to the same
/// answer (SIMILAR TO) is refused.
/// </summary>
public static class PgDialect
{
    /// <summary>Functions whose DuckDB table form yields one column, which PostgreSQL names after the FROM item's alias.</summary>
    private static readonly HashSet<string> SingleColumnFunctions = new(StringComparer.OrdinalIgnoreCase)
        { "generate_series", "unnest", "string_to_array", "regexp_split_to_table", "generate_subscripts" };

    /// <summary>Names that make a statement read the catalogs or the session (and so go to the SQL engine as written).</summary>
    private static readonly HashSet<string> CatalogNames = new(StringComparer.OrdinalIgnoreCase)
    {
        "pg_catalog", "information_schema", "current_setting", "version", "parse_ident", "current_database", "current_schema", "current_schemas",
        "current_user", "session_user", "current_role", "current_catalog", "user", "format_type", "quote_ident", "has_table_privilege",
        "has_schema_privilege", "has_database_privilege", "obj_description", "col_description", "shobj_description",
    };

    /// <summary>Whether the statement reads a catalog (pg_catalog's tables, information_schema) or the session.</summary>
    public static bool ReadsCatalog(string sql)
    {
        foreach (var (start, length, quoted) in Words(sql))
        {
            if (quoted) continue;
            var word = sql.AsSpan(start, length);
            if (word.StartsWith("pg_", StringComparison.OrdinalIgnoreCase) || CatalogNames.Contains(word.ToString())) return true;
        }
        return false;
    }

    /// <summary>
    /// The text as DuckDB must read it: <c>pg_catalog.x</c> is <c>x</c> (PostgreSQL searches pg_catalog first);
    /// <c>information_schema.x</c> is the table <c>information_schema_x</c>; <c>COLLATE "C"</c> or the default collation is the
    /// only order Magpie has and is dropped; current_user, session_user, user, current_catalog and current_schema are the session's.
    /// </summary>
    public static string Prepare(string sql, PgSessionInfo session)
    {
        var words = Words(sql).ToList();
        var b = new StringBuilder(sql.Length);
        var at = 0;
        for (var i = 0; i < words.Count; i++)
        {
            var (start, length, quoted) = words[i];
            var word = Unquote(sql.Substring(start, length), quoted);
            var dotAfter = start + length < sql.Length && sql[start + length] == '.';
            var dotBefore = start > 0 && sql[start - 1] == '.';
            string? replacement = null;
            var end = start + length;
            if (word.Equals("pg_catalog", StringComparison.OrdinalIgnoreCase) && !quoted && dotAfter && !dotBefore)
                (replacement, end) = ("", start + length + 1);
            else if (word.Equals("information_schema", StringComparison.OrdinalIgnoreCase) && dotAfter && !dotBefore && i + 1 < words.Count && words[i + 1].Start == end + 1)
            {
                var next = words[i + 1];
                replacement = Quote("information_schema_" + Unquote(sql.Substring(next.Start, next.Length), next.Quoted).ToLowerInvariant());
                end = next.Start + next.Length;
                i++;
            }
            else if (word.Equals("collate", StringComparison.OrdinalIgnoreCase) && !quoted && i + 1 < words.Count)
            {
                var k = i + 1;
                if (!words[k].Quoted && sql.Substring(words[k].Start, words[k].Length).Equals("pg_catalog", StringComparison.OrdinalIgnoreCase) && k + 1 < words.Count) k++;
                var collation = Unquote(sql.Substring(words[k].Start, words[k].Length), words[k].Quoted);
                if (collation is "C" or "POSIX" or "default" or "ucs_basic")
                {
                    (replacement, end) = ("", words[k].Start + words[k].Length);
                    i = k;
                }
            }
            else if (!quoted && !dotBefore && !dotAfter && !FollowedByParenthesis(sql, end))
                // The session's names are its functions (PgSessionCatalog), which also name the column as PostgreSQL does.
                replacement = word.ToLowerInvariant() is "current_user" or "session_user" or "current_role" or "user" or "current_catalog" or "current_schema"
                    ? Quote(word.ToLowerInvariant()) + "()" : null;
            if (replacement is null) continue;
            b.Append(sql, at, start - at).Append(replacement);
            at = end;
        }
        return b.Append(sql, at, sql.Length - at).ToString();
    }

    /// <summary>
    /// The syntax tree rewritten where DuckDB's reading differs from PostgreSQL's, or null when it needs nothing:
    /// <c>~</c>/<c>!~</c> match anywhere in the text (DuckDB's reading matches the whole text), <c>~*</c>/<c>!~*</c> ignoring case;
    /// <c>FROM generate_series(…) AS i</c> names its column <c>i</c>; unnamed result columns get PostgreSQL's names.
    /// </summary>
    public static JsonNode? Rewrite(string sql, JsonNode tree)
    {
        var changed = false;
        foreach (var node in Nodes(tree).ToList())
        {
            if (Text(node["class"]) == "FUNCTION" && Text(node["function_name"]) is { } name)
            {
                switch (name)
                {
                    case "regexp_full_match":
                        var location = node["query_location"]?.GetValue<ulong>() ?? ulong.MaxValue;
                        if (location < (ulong)sql.Length && sql.AsSpan((int)location).TrimStart().StartsWith("similar", StringComparison.OrdinalIgnoreCase))
                            throw new PgException(PgException.FeatureNotSupported, "SIMILAR TO is not answered by Magpie's endpoint yet: use LIKE or ~");
                        node["function_name"] = "regexp_matches";
                        changed = true;
                        break;
                    case "~*" or "!~*":
                        node["function_name"] = "regexp_matches";
                        node["is_operator"] = false;
                        node["children"]!.AsArray().Add(JsonNode.Parse("""{"class":"CONSTANT","type":"VALUE_CONSTANT","alias":"","query_location":18446744073709551615,"value":{"type":{"id":"VARCHAR","type_info":null},"is_null":false,"value":"i"}}"""));
                        if (name == "!~*")
                        {
                            var inner = node.DeepClone();
                            foreach (var key in node.AsObject().Select(p => p.Key).ToList()) node.AsObject().Remove(key);
                            node["class"] = "OPERATOR";
                            node["type"] = "OPERATOR_NOT";
                            node["alias"] = "";
                            node["query_location"] = ulong.MaxValue;
                            node["children"] = new JsonArray(inner);
                        }
                        changed = true;
                        break;
                }
            }
            if (Text(node["type"]) == "TABLE_FUNCTION" && Text(node["alias"]) is { Length: > 0 } alias
                && node["column_name_alias"] is JsonArray { Count: 0 } columns && Text(node["function"]?["function_name"]) is { } function
                && SingleColumnFunctions.Contains(function))
            {
                columns.Add(alias);
                changed = true;
            }
        }
        changed |= NameColumns(tree);
        return changed ? tree : null;
    }

    /// <summary>
    /// PostgreSQL's names for the outermost select list's unnamed columns (DuckDB names them after their text): a column its
    /// name, a function or aggregate its function's name, CASE "case", a cast what it casts (else the type), anything else
    /// "?column?". Grafana names series after them.
    /// </summary>
    private static bool NameColumns(JsonNode tree)
    {
        var changed = false;
        var node = tree["statements"]?[0]?["node"];
        while (node is not null && Text(node["type"]) == "SET_OPERATION_NODE") node = node["left"];
        if (node?["select_list"] is not JsonArray items) return false;
        foreach (var item in items)
        {
            if (item is null || Text(item["alias"]) is { Length: > 0 } || Text(item["class"]) is "STAR" or "COLUMNS") continue;
            if (Text(item["class"]) == "COLUMN_REF") continue;   // DuckDB names it as PostgreSQL does
            item["alias"] = NameOf(item) ?? "?column?";
            changed = true;
        }
        return changed;
    }

    private static string? NameOf(JsonNode item) => Text(item["class"]) switch
    {
        "COLUMN_REF" => item["column_names"] is JsonArray { Count: > 0 } names ? Text(names[^1]) : null,
        "FUNCTION" when item["is_operator"]?.GetValue<bool>() != true => Text(item["function_name"]) switch
        {
            "count_star" => "count",
            "date_part" => "extract",   // extract(field FROM x) reads as date_part
            "regexp_matches" or "regexp_full_match" or "~~" or "!~~" or "~~*" or "!~~*" or null => null,
            var f => f.ToLowerInvariant(),
        },
        "WINDOW" => Text(item["function_name"]) is { } w ? (w == "count_star" ? "count" : w.ToLowerInvariant()) : null,
        "AGGREGATE" => Text(item["function_name"])?.ToLowerInvariant(),
        "CASE" => "case",
        "CAST" => (item["child"] is { } child ? NameOf(child) : null) ?? CastName(item["cast_type"]),
        "OPERATOR" when Text(item["type"]) == "OPERATOR_COALESCE" => "coalesce",
        "SUBQUERY" when Text(item["subquery_type"]) == "EXISTS" => "exists",
        _ => null,
    };

    /// <summary>The type a cast names, as PostgreSQL's internal type name (int4, float8, text, …).</summary>
    private static string? CastName(JsonNode? type) => Text(type?["id"]) switch
    {
        "INTEGER" => "int4", "BIGINT" => "int8", "SMALLINT" => "int2", "DOUBLE" => "float8", "FLOAT" => "float4", "VARCHAR" => "text",
        "BOOLEAN" => "bool", "TIMESTAMP WITH TIME ZONE" => "timestamptz", "TIMESTAMP" => "timestamp", "DATE" => "date", "DECIMAL" => "numeric",
        "INTERVAL" => "interval", "UNBOUND" => Text(type?["type_info"]?["name"]),
        _ => null,
    };


    /// <summary>
    /// In PostgreSQL a name in the select list, WHERE, GROUP BY or HAVING is the table's column even where a select item is
    /// named the same (<c>SELECT round(avg(cpu)) AS cpu, stddev(cpu)</c>); DuckDB would read the alias there. Such names
    /// are qualified with their table (one table in FROM), so DuckDB reads them as PostgreSQL does. True when any was.
    /// </summary>
    public static bool QualifyShadowedColumns(JsonNode tree, Func<string, IReadOnlyList<string>?> columnsOf)
    {
        if (tree["statements"]?[0]?["node"] is not JsonObject select || Text(select["type"]) != "SELECT_NODE"
            || select["from_table"] is not JsonObject from || Text(from["type"]) != "BASE_TABLE" || Text(from["table_name"]) is not { } table
            || columnsOf(table) is not { } columns || select["select_list"] is not JsonArray items)
            return false;
        var aliases = new HashSet<string>(items.Select(i => Text(i?["alias"])).OfType<string>().Where(a => a.Length > 0), StringComparer.OrdinalIgnoreCase);
        var shadowed = new HashSet<string>(columns.Where(aliases.Contains), StringComparer.OrdinalIgnoreCase);
        if (shadowed.Count == 0) return false;
        var qualifier = Text(from["alias"]) is { Length: > 0 } alias ? alias : table;
        var changed = false;
        IEnumerable<JsonNode?> scopes = [.. items, select["where_clause"], select["having"], .. select["group_expressions"] as JsonArray ?? []];
        foreach (var scope in scopes.OfType<JsonNode>())
            foreach (var reference in Nodes(scope).Where(n => Text(n["class"]) == "COLUMN_REF"))
                if (reference["column_names"] is JsonArray { Count: 1 } names && Text(names[0]) is { } name && shadowed.Contains(name)
                    && !ReferenceEquals(reference, scope))   // a select item that is the column itself stays as written
                {
                    names.Insert(0, qualifier);
                    changed = true;
                }
        return changed;
    }

    /// <summary>A syntax tree node's string property, or null (absent, or not a string).</summary>
    public static string? Text(JsonNode? node) => node is JsonValue v && v.TryGetValue<string>(out var s) ? s : null;

    /// <summary>Every object of a syntax tree, the root's included.</summary>
    public static IEnumerable<JsonObject> Nodes(JsonNode node)
    {
        var stack = new Stack<JsonNode>([node]);
        while (stack.Count > 0)
        {
            switch (stack.Pop())
            {
                case JsonObject o:
                    yield return o;
                    foreach (var p in o) if (p.Value is not null) stack.Push(p.Value);
                    break;
                case JsonArray a:
                    foreach (var item in a) if (item is not null) stack.Push(item);
                    break;
            }
        }
    }

    private static bool FollowedByParenthesis(string sql, int end)
    {
        while (end < sql.Length && char.IsWhiteSpace(sql[end])) end++;
        return end < sql.Length && sql[end] == '(';
    }

    private static string Unquote(string word, bool quoted) => quoted ? word[1..^1].Replace("\"\"", "\"") : word;

    /// <summary>A name as SQL quotes it.</summary>
    public static string Quote(string identifier) => "\"" + identifier.Replace("\"", "\"\"") + "\"";

    /// <summary>A string as an SQL literal.</summary>
    public static string Literal(string value) => "'" + value.Replace("'", "''") + "'";

    /// <summary>The identifiers and keywords of a statement (outside literals and comments), quoted ones with their quotes.</summary>
    private static IEnumerable<(int Start, int Length, bool Quoted)> Words(string sql)
    {
        for (var i = 0; i < sql.Length; i++)
        {
            var c = sql[i];
            if (c == '\'')
            {
                var end = sql.IndexOf('\'', i + 1);
                while (end >= 0 && end + 1 < sql.Length && sql[end + 1] == '\'') end = sql.IndexOf('\'', end + 2);
                i = end < 0 ? sql.Length : end;
            }
            else if (c == '"')
            {
                var end = sql.IndexOf('"', i + 1);
                while (end >= 0 && end + 1 < sql.Length && sql[end + 1] == '"') end = sql.IndexOf('"', end + 2);
                if (end < 0) yield break;
                yield return (i, end - i + 1, true);
                i = end;
            }
            else if (c == '-' && i + 1 < sql.Length && sql[i + 1] == '-')
            {
                var end = sql.IndexOf('\n', i);
                i = end < 0 ? sql.Length : end;
            }
            else if (c == '/' && i + 1 < sql.Length && sql[i + 1] == '*')
            {
                var end = sql.IndexOf("*/", i + 2, StringComparison.Ordinal);
                i = end < 0 ? sql.Length : end + 1;
            }
            else if (c == '$' && i + 1 < sql.Length && (sql[i + 1] == '$' || char.IsLetter(sql[i + 1])))
            {
                // A dollar-quoted literal: $tag$ … $tag$.
                var close = sql.IndexOf('$', i + 1);
                if (close < 0) yield break;
                var tag = sql[i..(close + 1)];
                var end = sql.IndexOf(tag, close + 1, StringComparison.Ordinal);
                i = end < 0 ? sql.Length : end + tag.Length - 1;
            }
            else if (char.IsLetter(c) || c == '_')
            {
                var j = i + 1;
                while (j < sql.Length && (char.IsLetterOrDigit(sql[j]) || sql[j] is '_' or '$')) j++;
                yield return (i, j - i, false);
                i = j - 1;
            }
            else if (char.IsDigit(c))
            {
                while (i + 1 < sql.Length && (char.IsLetterOrDigit(sql[i + 1]) || sql[i + 1] == '.')) i++;
            }
        }
    }
}
