using Magpie.Query.Rql;
using System.Globalization;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// A WHERE clause as an RQL condition over an index's fields (which then runs like any query: Lucene, shards, staleness):
/// comparisons of a column with a literal, BETWEEN, IN, IS [NOT] NULL, AND/OR/NOT — with PostgreSQL's answers, not RQL's:
/// <list type="bullet">
/// <item>A field a document lacks is NULL, as is an explicit null; a comparison with NULL is unknown, and NOT of unknown is
/// still unknown, so <c>NOT (c = 1)</c>, <c>c &lt;&gt; 1</c> and <c>c NOT IN (…)</c> leave out rows where c is NULL
/// (three-valued logic: NOT is pushed down to the comparisons, each of which then also asks for a value).</item>
/// <item>A literal takes the column's type as PostgreSQL's unknown-typed literals do: <c>'10'</c> against a number column is
/// 10, <c>'2012-01-01'</c> against a timestamp is that instant; a literal that can't be read as the column's type is
/// refused (22P02, 22007), and a number against a text or timestamp column has no operator (42883).</item>
/// </list>
/// </summary>
public sealed class SqlToRql(Func<string, string> field, Func<string, PgType> typeOf)
{
    public string Condition(SqlExpr e, bool negated = false) => e switch
    {
        SqlBinary { Op: "and" or "or" } b =>
            $"({Condition(b.Left, negated)} {((b.Op == "and") ^ negated ? "and" : "or")} {Condition(b.Right, negated)})",
        SqlNot n => Condition(n.Inner, !negated),
        SqlBinary { Op: "=" or "<>" or "<" or "<=" or ">" or ">=" } b => Known(Compare(b, out var column), column, negated, matchesValues: b.Op != "<>"),
        SqlBetween b => Known(CaseSensitive($"{Field(b.Value)} between {Literal(b.Low, ColumnOf(b.Value))} and {Literal(b.High, ColumnOf(b.Value))}", ColumnOf(b.Value)),
            ColumnOf(b.Value), negated ^ b.Negated),
        SqlIn i => Known(CaseSensitive(In(i), ColumnOf(i.Value)), ColumnOf(i.Value), negated ^ i.Negated),
        SqlIsNull n => n.Negated ^ negated ? HasValue(ColumnOf(n.Value)) : $"({Field(n.Value)} = null or not exists({Field(n.Value)}))",
        // Magpie's full text in SQL: search(column, 'words'), as RQL's search() reads them; a NULL column matches neither way.
        SqlCall { Name: "search", Args: [var column, SqlLiteral { Value: string words }] } when IsColumn(column) =>
            negated ? $"(not search({Field(column)}, {RqlLexer.Quote(words)}) and {HasValue(ColumnOf(column))})" : $"search({Field(column)}, {RqlLexer.Quote(words)})",
        _ => throw Unsupported(e),
    };

    /// <summary>
    /// The condition true (or, negated, false — never unknown): the column must hold a value either way. A condition that
    /// <paramref name="matchesValues"/> (=, &lt;, BETWEEN, IN: only entries holding a matching value, never a missing field) needs
    /// only the null left out (an entry may hold a null beside a value); asking that the field exists as well made a query over
    /// every entry intersect two more postings lists (a third of a time-grouped aggregate over 1M posts).
    /// </summary>
    private string Known(string condition, string column, bool negated, bool matchesValues = true) =>
        negated ? $"(not ({condition}) and {HasValue(column)})"
        : matchesValues ? $"({condition} and {NotNull(column)})"
        : $"({condition} and {HasValue(column)})";

    private static string NotNull(string column) => $"not ({RqlLexer.Quote(column)} = null)";

    private static string HasValue(string column) => $"(exists({RqlLexer.Quote(column)}) and {NotNull(column)})";

    private string Compare(SqlBinary b, out string column)
    {
        var op = b.Op == "<>" ? "!=" : b.Op;
        var (col, literal) = IsColumn(b.Left) ? (b.Left, b.Right)
            : IsColumn(b.Right) ? (b.Right, b.Left) : throw Unsupported(b);
        if (!ReferenceEquals(col, b.Left)) op = op switch { "<" => ">", "<=" => ">=", ">" => "<", ">=" => "<=", _ => op };
        column = ColumnOf(col);
        var value = Literal(literal, column, b.Op);
        // A timestamp equals an instant, however the document spelled it: compare on the date, as ranges do.
        if (typeOf(column) == PgType.TimestampTz && op is "=" or "!=")
            return op == "=" ? $"{RqlLexer.Quote(column)} between {value} and {value}" : $"not ({RqlLexer.Quote(column)} between {value} and {value})";
        return CaseSensitive($"{RqlLexer.Quote(column)} {op} {value}", column);
    }

    /// <summary>Text compares as PostgreSQL's C collation does, case and all: on the exact field, not the lower-cased one.</summary>
    private string CaseSensitive(string condition, string column) => typeOf(column) == PgType.Text ? $"exact({condition})" : condition;

    private string In(SqlIn i)
    {
        var column = ColumnOf(i.Value);
        if (typeOf(column) == PgType.TimestampTz)
            return "(" + string.Join(" or ", i.List.Select(v => Literal(v, column, "=")).Select(v => $"{RqlLexer.Quote(column)} between {v} and {v}")) + ")";
        return $"{RqlLexer.Quote(column)} in ({string.Join(", ", i.List.Select(v => Literal(v, column, "=")))})";
    }

    private static bool IsColumn(SqlExpr e) => e is SqlColumn || e is SqlCast { Value: SqlColumn };

    private string ColumnOf(SqlExpr e) => e switch
    {
        SqlColumn c => field(c.Name),
        SqlCast { Value: SqlColumn c } => field(c.Name),
        _ => throw Unsupported(e),
    };

    public string Field(SqlExpr e) => RqlLexer.Quote(ColumnOf(e));

    /// <summary>A literal as a value of the column's type, or PostgreSQL's error for it.</summary>
    private string Literal(SqlExpr e, string column, string op = "=")
    {
        var type = typeOf(column);
        return e switch
        {
            SqlCast c => Literal(c.Value, column, op),
            SqlLiteral { Value: null } => throw new PgException(PgException.FeatureNotSupported,
                $"a comparison with NULL is never true in SQL: write \"{SqlText.Shorten(column)}\" IS NULL"),
            SqlLiteral { Value: string s } => type switch
            {
                PgType.Float8 or PgType.Int4 or PgType.Int8 => double.TryParse(s.Trim(), NumberStyles.Float, CultureInfo.InvariantCulture, out var d) && double.IsFinite(d)
                    ? Number(d)
                    : throw new PgException(PgException.InvalidTextRepresentation, $"invalid input syntax for type {TypeName(type)}: \"{SqlText.Shorten(s)}\""),
                PgType.TimestampTz => DateTimeOffset.TryParse(s.Trim(), CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out var t)
                    ? RqlLexer.Quote(t.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fffffff'Z'", CultureInfo.InvariantCulture))
                    : throw new PgException(PgException.InvalidDatetimeFormat, $"invalid input syntax for type timestamp with time zone: \"{SqlText.Shorten(s)}\""),
                _ => RqlLexer.Quote(s),
            },
            SqlLiteral { Value: double d } => Numeric(d, type, op),
            SqlNegate { Inner: SqlLiteral { Value: double d } } => Numeric(-d, type, op),
            SqlLiteral { Value: bool b } => throw NoOperator(type, "boolean", op),
            _ => throw new PgException(PgException.FeatureNotSupported, "a condition compares a column with a literal value here"),
        };
    }

    private static string Numeric(double d, PgType type, string op) => type is PgType.Float8 or PgType.Int4 or PgType.Int8
        ? Number(d)
        : throw NoOperator(type, Math.Floor(d) == d && Math.Abs(d) <= int.MaxValue ? "integer" : "numeric", op);

    private static string Number(double d) => d.ToString("R", CultureInfo.InvariantCulture);

    private static PgException NoOperator(PgType column, string literal, string op) => new(PgException.UndefinedFunction,
        $"operator does not exist: {TypeName(column)} {op} {literal} (compare a {TypeName(column)} column with a {(column == PgType.TimestampTz ? "timestamp such as '2012-01-01T00:00:00Z'" : "quoted string")})");

    internal static string TypeName(PgType type) => type switch
    {
        PgType.Float8 => "double precision", PgType.Int4 => "integer", PgType.Int8 => "bigint",
        PgType.TimestampTz => "timestamp with time zone", PgType.Bool => "boolean", PgType.Json => "json", _ => "text",
    };

    private static PgException Unsupported(SqlExpr e) =>
        new(PgException.FeatureNotSupported, $"this condition is not supported over an index ({e.GetType().Name[3..]}): compare columns with literals, BETWEEN, IN, IS NULL, search(column, 'words'), AND/OR/NOT");
}
