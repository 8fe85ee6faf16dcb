using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Postgres;
using Npgsql;

namespace Magpie.Tests.Deploy;

/// <summary>
/// Every SQL statement of the provisioned "your data" dashboard, with Grafana's macros expanded as Grafana expands
/// them, runs against Magpie holding the Stack Exchange sample and returns the columns Grafana needs (time first for
/// time series) and the values computed here from Posts.xml. A panel added without an expectation fails the test.
/// </summary>
public sealed class DashboardSqlTests(DeployedIndexesFixture fx) : IClassFixture<DeployedIndexesFixture>
{
    private static readonly DateTime From = new(2012, 3, 1, 0, 0, 0, DateTimeKind.Utc);
    private static readonly DateTime To = new(2016, 6, 30, 12, 0, 0, DateTimeKind.Utc);
    private const string Float = "double precision", Bigint = "bigint", Timestamp = "timestamp with time zone", Text = "text";

    /// <summary>Each SQL target of the data dashboard with Grafana's macros expanded for the test's time range.</summary>
    public static IEnumerable<string> PanelSql()
    {
        using var dashboard = JsonDocument.Parse(File.ReadAllText(DashboardPath("magpie-data.json")));
        return dashboard.RootElement.GetProperty("panels").EnumerateArray().SelectMany(p => p.GetProperty("targets").EnumerateArray())
            .Select(t => GrafanaMacros.Expand(t.GetProperty("rawSql").GetString()!, From, To)).ToList();
    }

    public static string DashboardPath(string file) => Path.Combine(RepoPaths.Root, "deploy", "grafana", "dashboards", file);

    [Fact]
    public async Task Every_panel_of_the_data_dashboard_answers_what_the_xml_says()
    {
        using var dashboard = JsonDocument.Parse(await File.ReadAllTextAsync(DashboardPath("magpie-data.json")));
        var targets = dashboard.RootElement.GetProperty("panels").EnumerateArray()
            .SelectMany(p => p.GetProperty("targets").EnumerateArray().Select(t => (Title: p.GetProperty("title").GetString()!, Target: t)))
            .ToList();
        Assert.NotEmpty(targets);
        await using var db = new NpgsqlConnection(fx.ConnectionString());
        await db.OpenAsync();
        var inRange = fx.Posts.Where(p => p.Created >= From && p.Created <= To).ToList();
        Assert.InRange(inRange.Count, 100, fx.Posts.Count - 100);   // the range cuts the sample, so the filter matters

        foreach (var (title, target) in targets)
        {
            Assert.Equal("magpie-pg", target.GetProperty("datasource").GetProperty("uid").GetString());
            var sql = GrafanaMacros.Expand(target.GetProperty("rawSql").GetString()!, From, To);
            var asTimeSeries = target.GetProperty("format").GetString() == "time_series";
            switch (title)
            {
                case "Posts":
                    Assert.Equal([[(long)inRange.Count]], await Rows(db, sql, ("posts", Bigint)));
                    break;
                case "Posts per 30 days":
                    Assert.True(asTimeSeries);
                    Assert.Contains("/2.592e+06)*2.592e+06", sql);   // what Grafana sends for '30d'
                    Assert.Equal(PerMonth(inRange).Select(g => new object[] { g.Key, (long)g.Count() }),
                        await Rows(db, sql, ("time", Float), ("posts", Bigint)));
                    break;
                case "Score per 30 days":
                    Assert.True(asTimeSeries);
                    Assert.Equal(PerMonth(inRange).Select(g => new object[] { g.Key, (double)g.Sum(p => p.Score), (double)g.Max(p => p.Score) }),
                        await Rows(db, sql, ("time", Float), ("score", Float), ("best", Float)));
                    break;
                case "Posts by type":
                    var byType = inRange.GroupBy(p => p.Type).OrderByDescending(g => g.Count()).ToList();
                    var rows = await Rows(db, sql, ("PostTypeId", Float), ("posts", Bigint), ("avg score", Float));
                    // Ordered by count; types with equal counts may come in either order.
                    Assert.Equal(byType.Select(g => (long)g.Count()), rows.Select(r => (long)r[1]!));
                    Assert.Equal(byType.Select(g => ((double)g.Key, (long)g.Count(), Math.Round(g.Average(p => p.Score), 9))).Order(),
                        rows.Select(r => ((double)r[0]!, (long)r[1]!, Math.Round((double)r[2]!, 9))).Order());
                    break;
                case "Top tags (map/reduce index TagCounts)":
                    // All time (no time filter): the map/reduce results, 15 tags with the most posts.
                    var tags = fx.Posts.SelectMany(p => p.Tags.Select(t => (Tag: t, p.Score))).GroupBy(t => t.Tag)
                        .ToDictionary(g => g.Key, g => ((double)g.Count(), (double)g.Sum(t => t.Score)));
                    var top = await Rows(db, sql, ("Tag", Text), ("Posts", Float), ("Score", Float));
                    Assert.Equal(tags.Values.Select(v => v.Item1).OrderDescending().Take(15), top.Select(r => (double)r[1]!));
                    Assert.All(top, r => Assert.Equal(tags[(string)r[0]!], ((double)r[1]!, (double)r[2]!)));
                    break;
                case "Best questions":
                    var best = inRange.Where(p => p.Type == 1).OrderByDescending(p => p.Score).Take(10).ToList();
                    var answered = await Rows(db, sql, ("time", Timestamp), ("Title", Text), ("Score", Float));
                    Assert.Equal(best.Select(p => (double)p.Score), answered.Select(r => (double)r[2]!));
                    Assert.All(answered, r => Assert.Contains(inRange, p => p.Type == 1 && p.Created == (DateTime)r[0]! && p.Title == (string)r[1]! && p.Score == (double)r[2]!));
                    break;
                default:
                    Assert.Fail($"panel '{title}' has no expectation in this test: add one");
                    break;
            }
        }
    }

    private static List<IGrouping<double, DeployedIndexesFixture.Post>> PerMonth(IEnumerable<DeployedIndexesFixture.Post> posts) =>
        posts.GroupBy(p => Math.Floor((p.Created - DateTime.UnixEpoch).TotalSeconds / 2592000) * 2592000).OrderBy(g => g.Key).ToList();

    private static async Task<List<object?[]>> Rows(NpgsqlConnection db, string sql, params (string Name, string Type)[] columns)
    {
        try { return await PostgresEndpointTests.RowsAsync(db, sql, columns); }
        catch (Exception e) { throw new Xunit.Sdk.XunitException($"{sql}\n{e.Message}"); }
    }
}
