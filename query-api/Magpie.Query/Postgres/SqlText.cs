using System.Text;

namespace Magpie.Query.Postgres;

/// <summary>Statement text handling that must respect quotes and comments: splitting a simple query at ';', putting bound parameters in.</summary>
public static class SqlText
{
    /// <summary>A name or piece of a statement as an error quotes it: at most <paramref name="max"/> characters, then "…".</summary>
    public static string Shorten(string text, int max = 64) => text.Length <= max ? text : string.Concat(text.AsSpan(0, max), "…");

    /// <summary>The statements of a simple query; empty and comment-only ones are dropped (an all-empty query gives none).</summary>
    public static List<string> Split(string sql)
    {
        var parts = new List<string>();
        var current = new StringBuilder();
        var meaningful = false;
        for (var i = 0; i < sql.Length; i++)
        {
            var c = sql[i];
            if (c is '\'' or '"')
            {
                var end = sql.IndexOf(c, i + 1);
                while (end >= 0 && end + 1 < sql.Length && sql[end + 1] == c) end = sql.IndexOf(c, end + 2);
                end = end < 0 ? sql.Length - 1 : end;
                current.Append(sql, i, end - i + 1);
                meaningful = true;
                i = end;
            }
            else if (c == '-' && i + 1 < sql.Length && sql[i + 1] == '-')
            {
                var end = sql.IndexOf('\n', i);
                i = end < 0 ? sql.Length : end;
                current.Append(' ');
            }
            else if (c == '/' && i + 1 < sql.Length && sql[i + 1] == '*')
            {
                var end = sql.IndexOf("*/", i + 2, StringComparison.Ordinal);
                i = end < 0 ? sql.Length : end + 1;
                current.Append(' ');
            }
            else if (c == ';')
            {
                if (meaningful) parts.Add(current.ToString().Trim());
                current.Clear();
                meaningful = false;
            }
            else
            {
                current.Append(c);
                meaningful |= !char.IsWhiteSpace(c);
            }
        }
        if (meaningful) parts.Add(current.ToString().Trim());
        return parts;
    }

    /// <summary>Whether a statement is RQL (<c>from …</c>), which the endpoint runs as written, rather than SQL.</summary>
    public static bool IsRql(string statement) =>
        statement.AsSpan().TrimStart().StartsWith("from", StringComparison.OrdinalIgnoreCase)
        && (statement.TrimStart().Length == 4 || !char.IsLetterOrDigit(statement.TrimStart()[4]));

    /// <summary>$1, $2, … replaced by the bound values (already SQL literals), outside quotes.</summary>
    public static string Substitute(string sql, IReadOnlyList<string> values)
    {
        if (values.Count == 0) return sql;
        var b = new StringBuilder(sql.Length);
        for (var i = 0; i < sql.Length; i++)
        {
            var c = sql[i];
            if (c is '\'' or '"')
            {
                var end = sql.IndexOf(c, i + 1);
                end = end < 0 ? sql.Length - 1 : end;
                b.Append(sql, i, end - i + 1);
                i = end;
            }
            else if (c == '$' && i + 1 < sql.Length && char.IsAsciiDigit(sql[i + 1]))
            {
                var j = i + 1;
                while (j < sql.Length && char.IsAsciiDigit(sql[j])) j++;
                var digits = sql.AsSpan(i + 1, j - i - 1);
                if (!int.TryParse(digits, out var n) || n < 1 || n > values.Count)
                    throw new PgException("08P01", $"there is no parameter ${Shorten(digits.ToString())}");
                b.Append(values[n - 1]);
                i = j - 1;
            }
            else b.Append(c);
        }
        return b.ToString();
    }
}
