using System.Globalization;
using System.Text;

namespace Magpie.Query.Postgres.Sql;

/// <summary>The SQL subset Magpie answers: one SELECT over an index, with the expressions Grafana's macros expand to.</summary>
public abstract record SqlExpr;
public sealed record SqlColumn(string Name) : SqlExpr;
public sealed record SqlLiteral(object? Value) : SqlExpr;
public sealed record SqlStar : SqlExpr;
public sealed record SqlCall(string Name, IReadOnlyList<SqlExpr> Args) : SqlExpr;
public sealed record SqlExtractEpoch(SqlExpr Of) : SqlExpr;
public sealed record SqlBinary(string Op, SqlExpr Left, SqlExpr Right) : SqlExpr;
public sealed record SqlNot(SqlExpr Inner) : SqlExpr;
public sealed record SqlNegate(SqlExpr Inner) : SqlExpr;
public sealed record SqlBetween(SqlExpr Value, SqlExpr Low, SqlExpr High, bool Negated) : SqlExpr;
public sealed record SqlIn(SqlExpr Value, IReadOnlyList<SqlExpr> List, bool Negated) : SqlExpr;
public sealed record SqlIsNull(SqlExpr Value, bool Negated) : SqlExpr;
public sealed record SqlCast(SqlExpr Value, string Type) : SqlExpr;

public sealed record SqlItem(SqlExpr Expr, string? Alias);
public sealed record SqlOrder(SqlExpr Expr, bool Descending);

public sealed record SqlSelect(IReadOnlyList<SqlItem> Items, string? From, SqlExpr? Where, IReadOnlyList<SqlExpr> GroupBy,
    IReadOnlyList<SqlOrder> OrderBy, long? Limit, long? Offset);

internal enum SqlTokenKind { Identifier, QuotedIdentifier, String, Number, Symbol, End }

internal sealed record SqlToken(SqlTokenKind Kind, string Text, int Position)
{
    public bool Is(string keyword) => Kind == SqlTokenKind.Identifier && string.Equals(Text, keyword, StringComparison.OrdinalIgnoreCase);
    public bool IsSymbol(string s) => Kind == SqlTokenKind.Symbol && Text == s;
}

/// <summary>A recursive-descent parser for <see cref="SqlSelect"/>; errors are 42601 with the position, as PostgreSQL reports them.</summary>
public sealed class SqlParser
{
    private readonly List<SqlToken> _tokens;
    private int _at, _depth, _clauses, _terms;

    private SqlParser(string sql) => _tokens = Tokenize(sql);

    public static SqlSelect Parse(string sql) =>
        sql.Length > Rql.QueryLimits.MaxQueryChars ? throw Limit(Rql.QueryLimits.TooLong(sql.Length)) : new SqlParser(sql).Select();

    /// <summary>A statement past one of <see cref="Rql.QueryLimits"/>: 54001, statement too complex, as PostgreSQL says of its own limits.</summary>
    private static PgException Limit(string message) => new(PgException.StatementTooComplex, message);

    /// <summary>One level deeper: refused past the nesting limit before the recursion goes on.</summary>
    private T Nested<T>(Func<T> parse)
    {
        if (++_depth > Rql.QueryLimits.MaxNesting) throw Limit(Rql.QueryLimits.TooDeep);
        var result = parse();
        _depth--;
        return result;
    }

    private SqlToken Current => _tokens[_at];

    /// <summary>The token after <see cref="Current"/>; at the end, the end token again (a statement may stop anywhere).</summary>
    private SqlToken Next => _tokens[Math.Min(_at + 1, _tokens.Count - 1)];

    private SqlSelect Select()
    {
        Expect("select");
        // SELECT DISTINCT of plain columns is their GROUP BY (a template variable's query); anything else is the evaluator's.
        var distinct = Current.Is("distinct");
        if (distinct && Next.Is("on")) throw new PgException(PgException.FeatureNotSupported, "DISTINCT ON is evaluated outside the index");
        if (distinct) _at++;
        var items = new List<SqlItem>();
        do
        {
            if (Current.IsSymbol("*")) { _at++; items.Add(new SqlItem(new SqlStar(), null)); continue; }
            var e = Expr();
            string? alias = null;
            if (Current.Is("as")) { _at++; alias = Name(); }
            else if (Current.Kind is SqlTokenKind.QuotedIdentifier || Current.Kind == SqlTokenKind.Identifier && !Reserved.Contains(Current.Text)) alias = Name();
            items.Add(new SqlItem(e, alias));
        } while (Accept(","));
        string? from = null;
        if (Current.Is("from"))
        {
            _at++;
            from = Name();
            while (Current.IsSymbol(".")) { _at++; from += "." + Name(); }
        }
        SqlExpr? where = null;
        if (Current.Is("where")) { _at++; where = Expr(); }
        var group = new List<SqlExpr>();
        if (Current.Is("group")) { _at++; Expect("by"); do group.Add(Expr()); while (Accept(",")); }
        var order = new List<SqlOrder>();
        if (Current.Is("order"))
        {
            _at++;
            Expect("by");
            do
            {
                var e = Expr();
                var desc = false;
                if (Current.Is("desc")) { desc = true; _at++; }
                else if (Current.Is("asc")) _at++;
                if (Current.Is("nulls")) throw new PgException(PgException.FeatureNotSupported, "NULLS FIRST/LAST is evaluated outside the index");
                order.Add(new SqlOrder(e, desc));
            } while (Accept(","));
        }
        long? limit = null, offset = null;
        for (var i = 0; i < 2; i++)
        {
            if (Current.Is("limit")) { _at++; limit = Current.Is("all") ? Skip<long?>(null) : Count(); }
            else if (Current.Is("offset")) { _at++; offset = Count(); }
        }
        if (Current.Kind != SqlTokenKind.End) throw Error($"syntax error at or near \"{Current.Text}\"");
        // GROUP BY a name that is also a select item's alias: PostgreSQL groups by the table's column of that name.
        if (group.OfType<SqlColumn>().Any(g => items.Any(i => string.Equals(i.Alias, g.Name, StringComparison.OrdinalIgnoreCase)
                && !(i.Expr is SqlColumn c && string.Equals(c.Name, g.Name, StringComparison.OrdinalIgnoreCase)))))
            throw new PgException(PgException.FeatureNotSupported, "GROUP BY a name that is also an alias is evaluated outside the index");
        if (distinct)
        {
            if (group.Count > 0 || items.Any(i => i.Expr is not SqlColumn))
                throw new PgException(PgException.FeatureNotSupported, "SELECT DISTINCT of anything but columns is evaluated outside the index");
            group.AddRange(items.Select(i => i.Expr));
        }
        return new SqlSelect(items, from, where, group, order, limit, offset);
    }

    private T Skip<T>(T value) { _at++; return value; }

    private long Count()
    {
        if (Current.Kind == SqlTokenKind.Number && long.TryParse(Current.Text, CultureInfo.InvariantCulture, out var n) && n >= 0) { _at++; return n; }
        throw Error($"LIMIT and OFFSET take a non-negative integer, not \"{Current.Text}\"");
    }

    private SqlExpr Expr() => Nested(Or);

    private SqlExpr Or()
    {
        var left = And();
        while (Current.Is("or")) { _at++; left = new SqlBinary("or", left, And()); }
        return left;
    }

    private SqlExpr And()
    {
        var left = NotExpr();
        while (Current.Is("and")) { _at++; left = new SqlBinary("and", left, NotExpr()); }
        return left;
    }

    private SqlExpr NotExpr()
    {
        if (Current.Is("not")) { _at++; return new SqlNot(Nested(NotExpr)); }
        if (++_clauses > Rql.QueryLimits.MaxClauses) throw Limit(Rql.QueryLimits.TooManyClauses);
        return Comparison();
    }

    private SqlExpr Comparison()
    {
        var left = Additive();
        var negated = false;
        if (Current.Is("not") && (Next.Is("between") || Next.Is("in"))) { negated = true; _at++; }
        if (Current.Is("between"))
        {
            _at++;
            var low = Additive();
            Expect("and");
            return new SqlBetween(left, low, Additive(), negated);
        }
        if (Current.Is("in"))
        {
            _at++;
            Expect("(");
            var list = new List<SqlExpr>();
            do
            {
                if (list.Count == Rql.QueryLimits.MaxInValues) throw Limit(Rql.QueryLimits.TooManyInValues);
                list.Add(Additive());
            } while (Accept(","));
            Expect(")");
            return new SqlIn(left, list, negated);
        }
        if (Current.Is("is"))
        {
            _at++;
            var not = Accept("not");
            Expect("null");
            return new SqlIsNull(left, not);
        }
        if (Current.Kind == SqlTokenKind.Symbol && Current.Text is "=" or "<>" or "!=" or "<" or "<=" or ">" or ">=")
        {
            var op = Current.Text == "!=" ? "<>" : Current.Text;
            _at++;
            return new SqlBinary(op, left, Additive());
        }
        return left;
    }

    private SqlExpr Additive()
    {
        var left = Multiplicative();
        while (Current.IsSymbol("+") || Current.IsSymbol("-")) { var op = Current.Text; _at++; left = new SqlBinary(op, left, Multiplicative()); }
        return left;
    }

    private SqlExpr Multiplicative()
    {
        var left = Unary();
        while (Current.IsSymbol("*") || Current.IsSymbol("/")) { var op = Current.Text; _at++; left = new SqlBinary(op, left, Unary()); }
        return left;
    }

    private SqlExpr Unary()
    {
        if (Current.IsSymbol("-")) { _at++; return new SqlNegate(Nested(Unary)); }
        var e = Primary();
        while (Current.IsSymbol("::")) { _at++; e = new SqlCast(e, Name().ToLowerInvariant()); }
        return e;
    }

    private SqlExpr Primary()
    {
        if (++_terms > Rql.QueryLimits.MaxSqlTerms) throw Limit(Rql.QueryLimits.TooManyTerms);
        var t = Current;
        if (Accept("("))
        {
            var inner = Expr();
            Expect(")");
            return inner;
        }
        switch (t.Kind)
        {
            case SqlTokenKind.Number:
                // The lexer takes what looks like a number ("2E-", "1.2.3"); only what parses is one.
                if (!double.TryParse(t.Text, NumberStyles.Float, CultureInfo.InvariantCulture, out var number))
                    throw new PgException(PgException.SyntaxError, $"syntax error at or near \"{SqlText.Shorten(t.Text)}\": not a number");
                _at++;
                return new SqlLiteral(number);
            case SqlTokenKind.String: _at++; return new SqlLiteral(t.Text);
            case SqlTokenKind.QuotedIdentifier: _at++; return new SqlColumn(t.Text);
            case SqlTokenKind.Identifier:
                if (t.Is("null")) { _at++; return new SqlLiteral(null); }
                if (t.Is("true") || t.Is("false")) { _at++; return new SqlLiteral(t.Is("true")); }
                if (Next.IsSymbol("("))
                {
                    _at += 2;
                    if (t.Is("extract"))
                    {
                        if (!Current.Is("epoch")) throw Error("extract() supports epoch only: extract(epoch from column)");
                        _at++;
                        Expect("from");
                        var of = Expr();
                        Expect(")");
                        return new SqlExtractEpoch(of);
                    }
                    var args = new List<SqlExpr>();
                    if (Current.IsSymbol("*")) { _at++; args.Add(new SqlStar()); }
                    else if (!Current.IsSymbol(")")) do args.Add(Expr()); while (Accept(","));
                    Expect(")");
                    return new SqlCall(t.Text.ToLowerInvariant(), args);
                }
                if (Reserved.Contains(t.Text)) throw Error($"syntax error at or near \"{t.Text}\"");
                _at++;
                var name = t.Text;
                while (Current.IsSymbol(".")) { _at++; name = Name(); }   // table.column: the column
                return new SqlColumn(name);
        }
        throw Error(t.Kind == SqlTokenKind.End ? "syntax error at end of input" : $"syntax error at or near \"{t.Text}\"");
    }

    private string Name()
    {
        var t = Current;
        if (t.Kind is SqlTokenKind.Identifier or SqlTokenKind.QuotedIdentifier) { _at++; return t.Text; }
        throw Error(t.Kind == SqlTokenKind.End ? "syntax error at end of input" : $"syntax error at or near \"{t.Text}\"");
    }

    private bool Accept(string s)
    {
        if (Current.IsSymbol(s) || Current.Is(s)) { _at++; return true; }
        return false;
    }

    private void Expect(string s)
    {
        if (!Accept(s)) throw Error(Current.Kind == SqlTokenKind.End ? $"syntax error at end of input (expected {s.ToUpperInvariant()})" : $"syntax error at or near \"{Current.Text}\" (expected {s.ToUpperInvariant()})");
    }

    private PgException Error(string message) => new(PgException.SyntaxError, message);

    private static readonly HashSet<string> Reserved = new(StringComparer.OrdinalIgnoreCase)
        { "select", "from", "where", "group", "order", "by", "limit", "offset", "and", "or", "not", "as", "asc", "desc", "between", "in", "is", "having", "union" };

    private static List<SqlToken> Tokenize(string sql)
    {
        var tokens = new List<SqlToken>();
        for (var i = 0; i < sql.Length;)
        {
            var c = sql[i];
            if (char.IsWhiteSpace(c)) { i++; continue; }
            var start = i;
            if (c is '\'' or '"')
            {
                var text = new StringBuilder();
                i++;
                while (true)
                {
                    if (i >= sql.Length) throw new PgException(PgException.SyntaxError, c == '\'' ? "unterminated quoted string" : "unterminated quoted identifier");
                    if (sql[i] == c && i + 1 < sql.Length && sql[i + 1] == c) { text.Append(c); i += 2; continue; }
                    if (sql[i] == c) { i++; break; }
                    text.Append(sql[i++]);
                }
                tokens.Add(new SqlToken(c == '\'' ? SqlTokenKind.String : SqlTokenKind.QuotedIdentifier, text.ToString(), start));
            }
            else if (char.IsAsciiDigit(c) || c == '.' && i + 1 < sql.Length && char.IsAsciiDigit(sql[i + 1]))
            {
                while (i < sql.Length && (char.IsAsciiDigit(sql[i]) || sql[i] == '.' || sql[i] is 'e' or 'E' && i + 1 < sql.Length && (char.IsAsciiDigit(sql[i + 1]) || sql[i + 1] is '-' or '+'))) i += sql[i] is 'e' or 'E' ? 2 : 1;
                tokens.Add(new SqlToken(SqlTokenKind.Number, sql[start..i], start));
            }
            else if (char.IsLetter(c) || c == '_')
            {
                while (i < sql.Length && (char.IsLetterOrDigit(sql[i]) || sql[i] is '_' or '$')) i++;
                tokens.Add(new SqlToken(SqlTokenKind.Identifier, sql[start..i], start));
            }
            else
            {
                var two = i + 1 < sql.Length ? sql.Substring(i, 2) : "";
                var symbol = two is "<=" or ">=" or "<>" or "!=" or "::" or "||" ? two : c.ToString();
                if (symbol.Length == 1 && "=<>(),.*/+-;[]%".IndexOf(c) < 0) throw new PgException(PgException.SyntaxError, $"syntax error at or near \"{c}\"");
                i += symbol.Length;
                tokens.Add(new SqlToken(SqlTokenKind.Symbol, symbol, start));
            }
        }
        tokens.Add(new SqlToken(SqlTokenKind.End, "", sql.Length));
        return tokens;
    }
}
