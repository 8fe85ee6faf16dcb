using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Http;
using Npgsql;

namespace Magpie.Tests.Queries.Conformance.Northwind;

/// <summary>
/// The docs' queries answered the same whichever way a client asks: over a stream, as a subscription (the cases a subscription
/// takes: no parameters), and as RQL through the PostgreSQL endpoint (no parameters: it quotes positional ones) — each against
/// the answer computed from the data.
/// </summary>
public sealed class NorthwindSurfaceTests(NorthwindFixture fx) : IClassFixture<NorthwindFixture>
{
    [Theory]
    [MemberData(nameof(RavenDocsQueryTests.IdNames), MemberType = typeof(RavenDocsQueryTests))]
    public async Task A_docs_query_answers_the_same_over_a_stream_a_subscription_and_postgres(string name)
    {
        var (_, query, parameters, expected) = RavenDocsQueryTests.IdCases[name];
        var want = expected(fx.Data).Order(StringComparer.Ordinal).ToList();
        var http = fx.Magpie.Http;
        var waited = await http.PostAsJsonAsync("queries", new { query, parameters, pageSize = 0, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(waited.IsSuccessStatusCode, await waited.Content.ReadAsStringAsync());

        using var streamed = await http.PostAsJsonAsync("streams/queries", new { query, parameters });
        Assert.Equal(HttpStatusCode.OK, streamed.StatusCode);
        var ids = (await streamed.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries)
            .Select(l => JsonDocument.Parse(l).RootElement.GetProperty("@metadata").GetProperty("@id").GetString()!);
        Assert.Equal(want, ids.Order(StringComparer.Ordinal));

        if (parameters is not null) return;
        Assert.Equal(want, await SubscriptionConformanceTests.DrainAsync(http, query));

        await using var pg = new NpgsqlConnection($"Host=127.0.0.1;Port={fx.Magpie.PgPort};Username=conformance;Database=magpie;Pooling=false;Server Compatibility Mode=NoTypeLoading");
        await pg.OpenAsync();
        await using var command = new NpgsqlCommand(query, pg);
        await using var reader = await command.ExecuteReaderAsync();
        var rows = new List<string>();
        while (await reader.ReadAsync()) rows.Add(reader.GetString(reader.GetOrdinal("id")));
        Assert.Equal(want, rows.Order(StringComparer.Ordinal));
    }
}
