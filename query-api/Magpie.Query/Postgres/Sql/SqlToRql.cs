using Magpie.Query.Rql;
using System.Globalization;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// A WHERE clause as an RQL condition (a tree the planner takes as it is) over an index's fields (which then runs like any query: Lucene, shards, staleness):
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
    private static readonly RqlValue Null = new(null);

    public RqlExpression Condition(SqlExpr e, bool negated = false) => e switch
    {
        SqlBinary { Op: "and" or "or" } b => (b.Op == "and") ^ negated
            ? new RqlAnd(Condition(b.Left, negated), Condition(b.Right, negated))
            : new RqlOr(Condition(b.Left, negated), Condition(b.Right, negated)),
        SqlNot n => Condition(n.Inner, !negated),
        SqlBinary { Op: "=" or "<>" or "<" or "<=" or ">" or ">=" } b => Known(Compare(b, out var column), column, negated, matchesValues: b.Op != "<>"),
        SqlBetween b => Known(new RqlBetween(ColumnOf(b.Value), Literal(b.Low, ColumnOf(b.Value)), Literal(b.High, ColumnOf(b.Value)), IsText(ColumnOf(b.Value))),
            ColumnOf(b.Value), negated ^ b.Negated),
        SqlIn i => Known(In(i), ColumnOf(i.Value), negated ^ i.Negated),
        SqlIsNull n => n.Negated ^ negated ? HasValue(ColumnOf(n.Value))
            : new RqlOr(new RqlCompare(ColumnOf(n.Value), "=", Null), new RqlNot(new RqlExists(ColumnOf(n.Value)))),
        // Magpie's full text in SQL: search(column, 'words'), as RQL's search() reads them; a NULL column matches neither way.
        SqlCall { Name: "search", Args: [var column, SqlLiteral { Value: string words }] } when IsColumn(column) =>
            negated ? new RqlAnd(new RqlNot(new RqlSearch(ColumnOf(column), new RqlValue(words))), HasValue(ColumnOf(column)))
            : new RqlSearch(ColumnOf(column), new RqlValue(words)),
        _ => throw Unsupported(e),
    };

    /// <summary>
    /// The condition true (or, negated, false — never unknown): the column must hold a value either way. A condition that
    /// <paramref name="matchesValues"/> (=, &lt;, BETWEEN, IN: only entries holding a matching value, never a missing field) needs
    /// only the null left out (an entry may hold a null beside a value); asking that the field exists as well made a query over
    /// every entry intersect two more postings lists (a third of a time-grouped aggregate over 1M posts).
    /// </summary>
    private static RqlExpression Known(RqlExpression condition, string column, bool negated, bool matchesValues = true) =>
        negated ? new RqlAnd(new RqlNot(condition), HasValue(column))
        : matchesValues ? new RqlAnd(condition, NotNull(column))
        : new RqlAnd(condition, HasValue(column));

    private static RqlExpression NotNull(string column) => new RqlNot(new RqlCompare(column, "=", Null));

    private static RqlExpression HasValue(string column) => new RqlAnd(new RqlExists(column), NotNull(column));

    private RqlExpression Compare(SqlBinary b, out string column)
    {
        var op = b.Op == "<>" ? "!=" : b.Op;
        var (col, literal) = IsColumn(b.Left) ? (b.Left, b.Right)
            : IsColumn(b.Right) ? (b.Right, b.Left) : throw Unsupported(b);
        if (!ReferenceEquals(col, b.Left)) op = op switch { "<" => ">", "<=" => ">=", ">" => "<", ">=" => "<=", _ => op };
        column = ColumnOf(col);
        var value = Literal(literal, column, b.Op);
        // A timestamp equals an instant, however the document spelled it: compare on the date, as ranges do.
        if (typeOf(column) == PgType.TimestampTz && op is "=" or "!=")
            return op == "=" ? new RqlBetween(column, value, value) : new RqlNot(new RqlBetween(column, value, value));
        return new RqlCompare(column, op, value, IsText(column));
    }

    /// <summary>Text compares as PostgreSQL's C collation does, case and all: on the exact field, not the lower-cased one.</summary>
    private bool IsText(string column) => typeOf(column) == PgType.Text;

    private RqlExpression In(SqlIn i)
    {
        var column = ColumnOf(i.Value);
        var values = i.List.Select(v => Literal(v, column, "=")).ToList();
        if (typeOf(column) == PgType.TimestampTz)
            return values.Select(v => (RqlExpression)new RqlBetween(column, v, v)).Aggregate((a, b) => new RqlOr(a, b));
        return new RqlIn(column, values, IsText(column));
    }

    private static bool IsColumn(SqlExpr e) => e is SqlColumn || e is SqlCast { Value: SqlColumn };

    private string ColumnOf(SqlExpr e) => e switch
    {
        SqlColumn c => field(c.Name),
        SqlCast { Value: SqlColumn c } => field(c.Name),
        _ => throw Unsupported(e),
    };

    /// <summary>A literal as a value of the column's type, or PostgreSQL's error for it.</summary>
    private RqlValue Literal(SqlExpr e, string column, string op = "=")
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
                    ? new RqlValue(d)
                    : throw new PgException(PgException.InvalidTextRepresentation, $"invalid input syntax for type {TypeName(type)}: \"{SqlText.Shorten(s)}\""),
                PgType.TimestampTz => DateTimeOffset.TryParse(s.Trim(), CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out var t)
                    ? new RqlValue(t.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fffffff'Z'", CultureInfo.InvariantCulture))
                    : throw new PgException(PgException.InvalidDatetimeFormat, $"invalid input syntax for type timestamp with time zone: \"{SqlText.Shorten(s)}\""),
                _ => new RqlValue(s),
            },
            SqlLiteral { Value: double d } => Numeric(d, type, op),
            SqlNegate { Inner: SqlLiteral { Value: double d } } => Numeric(-d, type, op),
            SqlLiteral { Value: bool b } => throw NoOperator(type, "boolean", op),
            _ => throw new PgException(PgException.FeatureNotSupported, "a condition compares a column with a literal value here"),
        };
    }

    private static RqlValue Numeric(double d, PgType type, string op) => type is PgType.Float8 or PgType.Int4 or PgType.Int8
        ? double.IsFinite(d) ? new RqlValue(d) : throw new PgException(PgException.NumericValueOutOfRange, "a numeric literal is out of range for type double precision")
        : throw NoOperator(type, Math.Floor(d) == d && Math.Abs(d) <= int.MaxValue ? "integer" : "numeric", op);

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
