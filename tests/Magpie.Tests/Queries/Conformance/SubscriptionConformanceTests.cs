using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Http;

namespace Magpie.Tests.Queries.Conformance;

/// <summary>
/// One evaluator: a subscription and a query with the same <c>where</c> select the same documents — every collection case of
/// the conformance suite, and conditions generated at random over the sample's fields.
/// </summary>
public sealed class SubscriptionConformanceTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>
{
    public static IEnumerable<object[]> CollectionCases =>
        RqlConformance.Cases.Where(c => c.Value.Rql.StartsWith("from Posts", StringComparison.Ordinal)).Select(c => new object[] { c.Key });

    [Theory]
    [MemberData(nameof(CollectionCases))]
    public async Task A_subscription_delivers_what_the_query_selects(string name)
    {
        var rql = RqlConformance.Cases[name].Rql;
        Assert.Equal(await RqlAnswers.IdsAsync(fx.Magpie.Http, rql), await DrainAsync(fx.Magpie.Http, rql));
    }

    [Fact]
    public async Task Random_conditions_select_the_same_documents_in_a_subscription_and_a_query()
    {
        var random = new Random(43);
        string[] words = ["history", "source*", "question", "\"primary sources\"", "wiki*", "tag", "close*", "answer~1"];
        string Condition(int depth)
        {
            var n = random.Next(depth > 2 ? 6 : 9);
            return n switch
            {
                0 => $"Score {new[] { ">", ">=", "<", "<=", "=", "!=" }[random.Next(6)]} {random.Next(-3, 15)}",
                1 => $"PostTypeId in ({random.Next(1, 3)}, {random.Next(3, 7)})",
                2 => $"search(Body, '{words[random.Next(words.Length)]} {words[random.Next(words.Length)]}'{(random.Next(2) == 0 ? ", and" : "")})",
                3 => $"startsWith(Title, '{new[] { "why", "how", "what", "should", "is" }[random.Next(5)]}')",
                4 => random.Next(2) == 0 ? "exists(Title)" : "Title = null",
                5 => $"CreationDate {(random.Next(2) == 0 ? ">=" : "<")} '{2011 + random.Next(8)}-0{1 + random.Next(9)}-01'",
                6 => $"({Condition(depth + 1)} and {Condition(depth + 1)})",
                7 => $"({Condition(depth + 1)} or {Condition(depth + 1)})",
                _ => $"not {Condition(depth + 1)}",
            };
        }
        for (var i = 0; i < 25; i++)
        {
            var rql = $"from Posts where {Condition(0)}";
            Assert.True((await RqlAnswers.IdsAsync(fx.Magpie.Http, rql)).SequenceEqual(await DrainAsync(fx.Magpie.Http, rql)), rql);
        }
    }

    private static int _n;

    /// <summary>
    /// A new subscription from the beginning, drained: the ids it delivers, each once (sorted). The import writes each post twice
    /// (then with its comments), and a subscription delivers every matching change; the conditions read fields both versions share.
    /// </summary>
    internal static async Task<List<string>> DrainAsync(HttpClient http, string rql)
    {
        var name = $"conformance-{Interlocked.Increment(ref _n)}";
        var created = await http.PostAsJsonAsync("subscriptions", new { name, query = rql });
        Assert.True(created.StatusCode == HttpStatusCode.Created, $"{rql}\n{await created.Content.ReadAsStringAsync()}");
        var ids = new List<string>();
        while (true)
        {
            var r = await http.GetAsync($"subscriptions/{name}/next?worker=w&maxDocs=1000&waitMs=200");
            if (r.StatusCode == HttpStatusCode.NoContent)
            {
                if ((await http.GetFromJsonAsync<JsonElement>($"subscriptions/{name}")).GetProperty("lag") is { ValueKind: JsonValueKind.Number } lag && lag.GetInt64() == 0) break;
                continue;
            }
            Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
            var body = await r.JsonAsync();
            ids.AddRange(body.GetProperty("items").EnumerateArray().Select(i => i.GetProperty("id").GetString()!));
            var ack = await http.PostAsJsonAsync($"subscriptions/{name}/ack", new { worker = "w", batchId = body.GetProperty("batchId").GetInt64() });
            Assert.Equal(HttpStatusCode.NoContent, ack.StatusCode);
        }
        await http.DeleteAsync($"subscriptions/{name}");
        return ids.Distinct().Order(StringComparer.Ordinal).ToList();
    }
}
