using System.Globalization;
using System.Text;

namespace Magpie.Query.Rql;

/// <summary>
/// A query built as a tree (the SQL engine's) written as RQL text, the form shard owners are sent and parse again: every
/// binary condition in parentheses, so the parser gives back the same tree. It writes what a built query holds — an index,
/// conditions on fields, an order, projections, highlights, limit and offset — and throws on anything else, never dropping it.
/// </summary>
public static class RqlWriter
{
    public static string Write(RqlQuery q)
    {
        if (!q.From.IsIndex) throw Unwritable("a collection source");
        if (q.Facets.Count > 0 || q.Suggestions.Count > 0 || q.Loads.Count > 0 || q.Includes.Count > 0 || q.GroupBy.Count > 0 || q.Script is not null
            || q.Functions.Count > 0 || q.Distinct || q.IsOperation || q.Timings || q.Explanations || q.Alias is not null)
            throw Unwritable("a clause beyond where, order by, select, include highlight, limit and offset");
        var text = new StringBuilder("from index ").Append(RqlLexer.Quote(q.From.Name));
        if (q.Where is { } where) text.Append(" where ").Append(Write(where));
        if (q.OrderBy.Count > 0)
            text.Append(" order by ").AppendJoin(", ", q.OrderBy.Select(o => o.Field is null || o.As is not null
                ? throw Unwritable("an order by score, random or a type") : RqlLexer.Quote(o.Field) + (o.Descending ? " desc" : "")));
        if (q.Select.Count > 0)
            text.Append(" select ").AppendJoin(", ", q.Select.Select(p => $"{RqlLexer.Quote(p.Field)} as {RqlLexer.Quote(p.Alias)}"));
        if (q.Highlights.Count > 0)
            text.Append(" include ").AppendJoin(", ", q.Highlights.Select(h => h.Options is null
                ? $"highlight({RqlLexer.Quote(h.Field)}, {Write(h.Length)}, {Write(h.Count)})" : throw Unwritable("highlight options")));
        if (q.Limit is not null || q.Offset is not null) text.Append(" limit ").Append(q.Limit ?? int.MaxValue);
        if (q.Offset is { } offset) text.Append(" offset ").Append(offset);
        return text.ToString();
    }

    public static string Write(RqlExpression e) => e switch
    {
        RqlAnd a => $"({Write(a.Left)} and {Write(a.Right)})",
        RqlOr o => $"({Write(o.Left)} or {Write(o.Right)})",
        RqlNot n => $"not ({Write(n.Inner)})",
        RqlCompare c => Exact($"{RqlLexer.Quote(c.Field)} {c.Operator} {Write(c.Value)}", c.Exact),
        RqlBetween b => Exact($"{RqlLexer.Quote(b.Field)} between {Write(b.Low)} and {Write(b.High)}", b.Exact),
        RqlIn { All: false } i => Exact($"{RqlLexer.Quote(i.Field)} in ({string.Join(", ", i.Values.Select(Write))})", i.Exact),
        RqlExists x => $"exists({RqlLexer.Quote(x.Field)})",
        RqlSearch s => $"search({RqlLexer.Quote(s.Field)}, {Write(s.Terms)}{(s.AllWords ? ", and" : "")})",
        _ => throw Unwritable(e.GetType().Name),
    };

    private static string Exact(string condition, bool exact) => exact ? $"exact({condition})" : condition;

    private static string Write(RqlValue v) => v switch
    {
        { IsParameter: true } => "$" + v.Parameter,
        { Literal: null } => "null",
        { Literal: string s } => RqlLexer.Quote(s),
        { Literal: double d } when double.IsFinite(d) => d.ToString("R", CultureInfo.InvariantCulture),
        { Literal: bool b } => b ? "true" : "false",
        _ => throw Unwritable($"the value {v.Literal}"),
    };

    private static InvalidOperationException Unwritable(string what) => new($"RqlWriter does not write {what}");
}
