using System.Globalization;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// A WHERE clause as an RQL condition over an index's fields (which then runs like any query: Lucene, shards, staleness):
/// comparisons of a column with a literal, BETWEEN, IN, IS [NOT] NULL, AND/OR/NOT. Timestamps compare as dates, as RQL does
/// for ISO strings; <c>'…'::timestamptz</c> casts are read through.
/// </summary>
public sealed class SqlToRql(Func<string, string> field)
{
    public string Condition(SqlExpr e) => e switch
    {
        SqlBinary { Op: "and" or "or" } b => $"({Condition(b.Left)} {b.Op} {Condition(b.Right)})",
        SqlNot n => $"not ({Condition(n.Inner)})",
        SqlBinary { Op: "=" or "<>" or "<" or "<=" or ">" or ">=" } b => Compare(b),
        SqlBetween b => Wrap(b.Negated, $"{Field(b.Value)} between {Literal(b.Low)} and {Literal(b.High)}"),
        SqlIn i => Wrap(i.Negated, $"{Field(i.Value)} in ({string.Join(", ", i.List.Select(Literal))})"),
        SqlIsNull n => Wrap(n.Negated, $"{Field(n.Value)} = null"),
        _ => throw Unsupported(e),
    };

    private string Compare(SqlBinary b)
    {
        var op = b.Op == "<>" ? "!=" : b.Op;
        if (IsColumn(b.Left)) return $"{Field(b.Left)} {op} {Literal(b.Right)}";
        if (IsColumn(b.Right))
        {
            var flipped = op switch { "<" => ">", "<=" => ">=", ">" => "<", ">=" => "<=", _ => op };
            return $"{Field(b.Right)} {flipped} {Literal(b.Left)}";
        }
        throw Unsupported(b);
    }

    private static string Wrap(bool negated, string condition) => negated ? $"not ({condition})" : condition;

    private static bool IsColumn(SqlExpr e) => e is SqlColumn || e is SqlCast { Value: SqlColumn };

    public string Field(SqlExpr e) => e switch
    {
        SqlColumn c => Quote(field(c.Name)),
        SqlCast { Value: SqlColumn c } => Quote(field(c.Name)),
        _ => throw Unsupported(e),
    };

    public static string Quote(string s) => "'" + s.Replace("\\", "\\\\").Replace("'", "\\'") + "'";

    public static string Literal(SqlExpr e) => e switch
    {
        SqlLiteral { Value: null } => "null",
        SqlLiteral { Value: string s } => Quote(s),
        SqlLiteral { Value: bool b } => b ? "true" : "false",
        SqlLiteral { Value: double d } => d.ToString("R", CultureInfo.InvariantCulture),
        SqlNegate { Inner: SqlLiteral { Value: double d } } => (-d).ToString("R", CultureInfo.InvariantCulture),
        SqlCast c => Literal(c.Value),
        _ => throw new PgException(PgException.FeatureNotSupported, "a condition compares a column with a literal value here"),
    };

    private static PgException Unsupported(SqlExpr e) =>
        new(PgException.FeatureNotSupported, $"this condition is not supported over an index ({e.GetType().Name[3..]}): compare columns with literals, BETWEEN, IN, IS NULL, AND/OR/NOT");
}
