using System.Collections;
using System.Reflection;
using Magpie.Query.Postgres;
using Magpie.Query.Postgres.Sql;
using Magpie.Query.Rql;

namespace Magpie.Tests.Postgres;

/// <summary>
/// SQL reaches the planner as a tree (<see cref="SqlToRql"/>), and shard owners as that tree written out (<see cref="RqlWriter"/>):
/// what they parse must be the very tree the planner planned, or an owner would answer another query than the coordinator merges.
/// </summary>
[Trait("Category", "Fast")]
public sealed class SqlTreeTests
{
    private static readonly Dictionary<string, PgType> Columns = new()
    {
        ["Title"] = PgType.Text, ["Score"] = PgType.Float8, ["PostTypeId"] = PgType.Float8, ["CreationDate"] = PgType.TimestampTz, ["Body"] = PgType.Text,
    };

    /// <summary>The WHERE clauses of the PostgreSQL semantics suite (and Grafana's time filter), as the index answers them.</summary>
    public static TheoryData<string> Wheres() =>
    [
        """ "Title" IS NULL""", """ "Title" IS NOT NULL AND "PostTypeId" = 2""", """ "Score" >= '10'""", """ "Score" = '10' OR "Score" = ' 3 '""",
        """ "Title" <> 'x'""", """ NOT ("Title" = 'x')""", """ NOT ("Title" < 'M')""", """ "Title" NOT IN ('a', 'b')""",
        """ "Title" NOT BETWEEN 'A' AND 'M'""", """ NOT ("Title" IS NULL OR "Score" > 3)""", """ NOT (NOT ("Title" >= 'S') AND "Score" < 2)""",
        """ "CreationDate" >= '2015-01-01'""", """ "CreationDate" = '2014-06-01T00:00:00Z' AND "Score" < -0.5""", """ "PostTypeId" IN (1, '2')""",
        """ "CreationDate" IN ('2014-01-01', '2015-01-01', '2016-01-01')""", """ 5 < "Score" AND "Score" <= 1e20""",
        """ "CreationDate" BETWEEN '2008-01-01T00:00:00Z' AND '2025-01-01T00:00:00Z'""", """ search("Body", 'coffee "french press"') AND NOT search("Title", 'tea')""",
        """ "Title" = 'it''s'""",
    ];

    [Theory]
    [MemberData(nameof(Wheres))]
    public void A_where_clause_written_for_the_owners_parses_back_to_the_planned_tree(string where)
    {
        var select = SqlParser.Parse($"SELECT * FROM t WHERE{where}");
        var planned = RqlQuery.OfIndex("Posts/Search", new SqlToRql(c => c, c => Columns[c]).Condition(select.Where!)) with
        {
            OrderBy = [new RqlOrder("Score", Descending: true, null), new RqlOrder("Title", false, null)],
            Select = [new RqlProjection("Title", "c0"), new RqlProjection("Score", "c1")],
            Highlights = [new RqlHighlight("Body", new RqlValue(128.0), new RqlValue(2.0), null)],
            Limit = int.MaxValue, Offset = 20,
        };
        var sent = RqlWriter.Write(planned);
        Assert.Equal(Shape(planned), Shape(RqlParser.Parse(sent)));
    }

    [Fact]
    public void What_the_writer_cannot_write_it_refuses_rather_than_drops()
    {
        var query = RqlQuery.OfIndex("Posts/Search");
        Assert.Throws<InvalidOperationException>(() => RqlWriter.Write(query with { Distinct = true }));
        Assert.Throws<InvalidOperationException>(() => RqlWriter.Write(query with { Where = new RqlRegex("Title", new RqlValue("^a")) }));
        Assert.Throws<InvalidOperationException>(() => RqlWriter.Write(query with { OrderBy = [new RqlOrder(null, true, null)] }));
        Assert.Throws<InvalidOperationException>(() => RqlWriter.Write(query with { From = new RqlSource("Posts", IsIndex: false) }));
    }

    /// <summary>A tree as text: each node's type and values, nested, without the source positions a parse adds.</summary>
    private static string Shape(object? node) => node switch
    {
        null => "null",
        string s => $"'{s}'",
        double or int or bool or long => Convert.ToString(node, System.Globalization.CultureInfo.InvariantCulture)!,
        IEnumerable list => "[" + string.Join(", ", list.Cast<object?>().Select(Shape)) + "]",
        _ => node.GetType().Name + "(" + string.Join(", ", node.GetType().GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .Where(p => p.Name is not ("Position" or "EqualityContract") && p.GetIndexParameters().Length == 0)
            .Select(p => $"{p.Name}: {Shape(p.GetValue(node))}")) + ")",
    };
}
