using Magpie.Contracts;
using System.Net.Http.Json;
using Confluent.Kafka;
using Magpie.Contracts.Indexes;
using Magpie.Kafka;

namespace Magpie.Ingest.Kafka;

/// <summary>
/// Read-your-writes when the indexers run in other processes (<c>--target ingest</c>): waits for the relay to
/// have the write confirmed on <c>magpie.changes</c> (which gives the offsets it ends at), then asks every
/// indexer process of the group (found through the consumer group) to answer once each of its indexes got there:
/// map indexes on the shards of those partitions, and the reduce side of map/reduce indexes on every shard (a
/// write's reduce key may be owned by any indexer). A partition without an owner (indexers starting, a rebalance) is asked again until the
/// timeout; no indexer running means the answer is "stale" when the timeout ends.
/// </summary>
public sealed class KafkaIndexWaiter(IndexerGroup group, HttpClient http, ChangeRelay? relay = null) : IIndexWaiter
{
    public Task<bool> WaitForEtagAsync(long etag, TimeSpan timeout, CancellationToken ct = default) =>
        WaitForEtagAsync(relay ?? throw new InvalidOperationException("a partitioned store's writes name the relay of their partition"), etag, timeout, ct);

    /// <summary>Waits for a write <paramref name="relay"/> publishes (a partitioned store's etags are its partition's).</summary>
    public async Task<bool> WaitForEtagAsync(ChangeRelay relay, long etag, TimeSpan timeout, CancellationToken ct = default)
    {
        var deadline = DateTime.UtcNow + timeout;
        if (await relay.PublishedAsync(etag, timeout, ct) is not { } ends) return false;
        var target = ends.Where(e => e.Value > 0).ToDictionary();
        return await Waits.UntilAsync(c => new ValueTask<bool>(AskOwnersAsync(target, deadline - DateTime.UtcNow, c)), deadline - DateTime.UtcNow, ct, poll: TimeSpan.FromMilliseconds(100));
    }

    private async Task<bool> AskOwnersAsync(Dictionary<int, long> target, TimeSpan left, CancellationToken ct)
    {
        IndexerLayout layout;
        try { layout = await group.DescribeAsync(); }
        catch (KafkaException) { return false; }
        if (!target.Keys.All(p => layout.Members.Any(m => m.Partitions.Contains(p)))) return false;
        var answers = await Task.WhenAll(layout.Members.Where(m => m.Partitions.Count > 0).Select(m => AskAsync(m.Url, target, left, ct)));
        return answers.All(a => a);
    }

    private async Task<bool> AskAsync(string url, Dictionary<int, long> target, TimeSpan left, CancellationToken ct)
    {
        try
        {
            var timeoutMs = (int)Math.Max(0, left.TotalMilliseconds);
            using var response = await http.PostAsJsonAsync(new Uri(new Uri(url), "shards/wait"), new { target, timeoutMs }, ct);
            if (!response.IsSuccessStatusCode) return false;
            return (await response.Content.ReadFromJsonAsync<Reached>(ct))?.reached == true;
        }
        catch (HttpRequestException) { return false; }
    }

    private sealed record Reached(bool reached);
}
