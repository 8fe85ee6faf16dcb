using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Kafka;

/// <summary>
/// Targets without ingest combine too (the module graph registers what they share once): an <c>indexer,query</c> process
/// beside an ingest process indexes and answers, and a second plain indexer shares the shards with it.
/// </summary>
public sealed class CombinedTargetsTests
{
    [Fact]
    public async Task An_indexer_and_query_process_indexes_the_changes_and_answers_with_another_indexer_beside_it()
    {
        // A broker of its own: the indexer group and the topics are the default ones.
        await using var broker = await KafkaBroker.StartOwnedAsync();
        var servers = broker.BootstrapServers;
        await using var ingest = await MagpieProcess.StartAsync(servers, target: "ingest");
        var ingestUrl = new Dictionary<string, string> { ["MAGPIE__INGESTURL"] = ingest.BaseUrl.ToString() };
        await using var combined = await MagpieProcess.StartAsync(servers, target: "indexer,query", environment: ingestUrl);
        await using var indexer = await MagpieProcess.StartAsync(servers, target: "indexer", environment: ingestUrl);

        var health = await combined.Http.GetFromJsonAsync<JsonElement>("health");
        Assert.Equal(["index-definitions", "document-filters", "indexer", "shard-search", "query", "postgres", "studio"],
            health.GetProperty("modules").EnumerateArray().Select(m => m.GetString()).ToList());

        var users = Enumerable.Range(0, 300).Select(i => ($"users/{i}", $$"""{"Name":"user {{i}}","Team":"{{(i % 3 == 0 ? "red" : "blue")}}"}""")).ToList();
        Assert.True((await ingest.Http.BulkPutAsync(users)).IsSuccessStatusCode);
        await SplitDeployment.RelayCaughtUpAsync(ingest);

        // The automatic index is defined through magpie.indexes, built by both indexers over their partitions, and the
        // combined process fans the query out to both (itself over HTTP like any other owner).
        var red = await SplitDeployment.NonStaleAsync(combined, "from users where Team = 'red'");
        Assert.Equal(100, red.GetProperty("totalResults").GetInt32());
        var shards = await combined.Http.GetFromJsonAsync<JsonElement>("indexes");
        Assert.Contains(shards.EnumerateArray(), i => i.GetProperty("name").GetString()!.StartsWith("Auto/users", StringComparison.Ordinal));
    }
}
