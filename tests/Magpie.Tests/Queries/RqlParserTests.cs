using Magpie.Query.Rql;

namespace Magpie.Tests.Queries;

[Trait("Category", "Fast")]
public sealed class RqlParserTests
{
    [Fact]
    public void A_full_query_parses_into_its_parts()
    {
        var q = RqlParser.Parse("""
            FROM INDEX 'Posts/ByTags'
            where Tags = 'discussion' and (Score >= 10 or Score between -5 and $low) and not exists(ClosedDate)
            order by Score as long desc, Title, score()
            select Title, Score as Points
            limit 25 offset 50
            """);
        Assert.Equal(new RqlSource("Posts/ByTags", IsIndex: true), q.From);
        var and1 = Assert.IsType<RqlAnd>(q.Where);
        var and2 = Assert.IsType<RqlAnd>(and1.Left);
        Assert.Equal(("Tags", "=", "discussion"), and2.Left is RqlCompare t ? (t.Field, t.Operator, t.Value.Literal) : default);
        var or = Assert.IsType<RqlOr>(and2.Right);
        Assert.Equal(10.0, Assert.IsType<RqlCompare>(or.Left).Value.Literal);
        var between = Assert.IsType<RqlBetween>(or.Right);
        Assert.Equal((-5.0, "low"), (between.Low.Literal, between.High.Parameter));
        Assert.Equal(new RqlExists("ClosedDate"), Assert.IsType<RqlNot>(and1.Right).Inner);
        Assert.Equal([new RqlOrder("Score", true, "long"), new RqlOrder("Title", false, null), new RqlOrder(null, true, null)], q.OrderBy);
        Assert.Equal([new RqlProjection("Title", "Title"), new RqlProjection("Score", "Points")], q.Select);
        Assert.Equal((25, 50), (q.Limit, q.Offset));
    }

    [Theory]
    [InlineData("from Posts where Group = 'a' order by Load select Include, Declare, Distinct", new[] { "Include", "Declare", "Distinct" })]
    [InlineData("from Posts where Load > 1 and Include = 2 select distinct Group", new[] { "Group" })]
    [InlineData("from Posts select Distinct", new[] { "Distinct" })]
    public void Clause_words_stay_field_names_where_no_clause_can_start(string rql, string[] selected)
    {
        var q = RqlParser.Parse(rql);
        Assert.Equal(selected, q.Select.Select(p => p.Field));
        Assert.Empty(q.GroupBy);
        Assert.Empty(q.Loads);
        Assert.Empty(q.Includes);
    }

    [Fact]
    public void Every_operator_and_function_has_its_node()
    {
        RqlExpression Where(string w) => RqlParser.Parse("from Posts where " + w).Where!;
        Assert.Equal("!=", ((RqlCompare)Where("A != 1")).Operator);
        Assert.Equal("!=", ((RqlCompare)Where("A <> 1")).Operator);
        foreach (var op in new[] { "<", "<=", ">", ">=" }) Assert.Equal(op, ((RqlCompare)Where($"A {op} 1.5")).Operator);
        Assert.Equal(["a", "b", 3.0], ((RqlIn)Where("A in ('a', \"b\", 3)")).Values.Select(v => v.Literal));
        Assert.Equal(("Name", "Jo"), Where("startsWith(Name, 'Jo')") is RqlStartsWith s ? (s.Field, s.Prefix.Literal) : default);
        Assert.IsType<RqlSearch>(Where("search(Body, 'history sources')"));
        Assert.Equal(("Name", "=", "Ann", true), Where("exact(Name = 'Ann')") is RqlCompare c ? (c.Field, c.Operator, c.Value.Literal, c.Exact) : default);
        Assert.True(((RqlIn)Where("exact(Tags in ('A', 'B'))")).Exact);
        Assert.Equal([true, false, null], new[] { "A = true", "A = false", "A = null" }.Select(w => ((RqlCompare)Where(w)).Value.Literal));
        Assert.Equal("it's", ((RqlCompare)Where(@"A = 'it\'s'")).Value.Literal);
        Assert.Equal("Owner.Name", ((RqlCompare)Where("Owner.Name = 'x'")).Field);
        // and binds tighter than or
        Assert.IsType<RqlOr>(Where("A = 1 or B = 2 and C = 3"));
        Assert.IsType<RqlAnd>(((RqlOr)Where("A = 1 or B = 2 and C = 3")).Right);
        Assert.Equal(new RqlSource("Posts", IsIndex: false), RqlParser.Parse("from Posts").From);
    }

    [Theory]
    [InlineData("", "empty", 1, 1)]
    [InlineData("select x", "expected 'from'", 1, 1)]
    [InlineData("from index", "expected an index name", 1, 11)]
    [InlineData("from Posts where", "expected a field name", 1, 17)]
    [InlineData("from Posts where A", "expected an operator after 'A'", 1, 19)]
    [InlineData("from Posts where A = ", "expected a value", 1, 22)]
    [InlineData("from Posts\nwhere A = 'open", "unclosed string", 2, 11)]
    [InlineData("from Posts where (A = 1", "expected ')'", 1, 24)]
    [InlineData("from Posts where A = 1 limit -3", "non-negative whole number", 1, 30)]
    [InlineData("from Posts where soundex(A, 'x')", "unknown function 'soundex'", 1, 18)]
    [InlineData("from Posts where A = 1 order Score", "expected 'by'", 1, 30)]
    [InlineData("from Posts where A = 1 garbage", "expected where, order by, load, select, include, limit", 1, 24)]
    [InlineData("from Posts where A = 1 # x", "unexpected character '#'", 1, 24)]
    public void Bad_queries_say_what_was_expected_and_where(string query, string message, int line, int column)
    {
        var e = Assert.Throws<RqlException>(() => RqlParser.Parse(query));
        Assert.Contains(message, e.Message);
        Assert.Equal((line, column), (e.Line, e.Column));
    }
}
