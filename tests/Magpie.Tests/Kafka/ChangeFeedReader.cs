using Magpie.Contracts.Changes;
using Magpie.Kafka.Changes;

namespace Magpie.Tests.Kafka;

/// <summary>Reads <c>magpie.changes</c> through the Kafka change feed until every expected etag of a test has arrived.</summary>
public static class ChangeFeedReader
{
    public static async Task<List<ChangeEvent>> ReadUntilAsync(string bootstrap, string idPrefix, IReadOnlySet<long> expectedEtags, TimeSpan timeout)
    {
        var received = new List<ChangeEvent>();
        var seen = new HashSet<long>();
        using var cts = new CancellationTokenSource(timeout);
        try
        {
            await foreach (var batch in new KafkaChangeFeed(bootstrap).ReadAsync(ChangeFeedPosition.Beginning, 1000, cts.Token))
            {
                foreach (var change in batch.Changes.Where(c => c.Id.StartsWith(idPrefix, StringComparison.Ordinal)))
                {
                    received.Add(change);
                    seen.Add(change.Etag);
                }
                if (expectedEtags.All(seen.Contains)) break;
            }
        }
        catch (OperationCanceledException) { }
        var missing = expectedEtags.Where(e => !seen.Contains(e)).ToList();
        Assert.True(missing.Count == 0, $"{missing.Count} of {expectedEtags.Count} acknowledged changes never reached magpie.changes (e.g. etags {string.Join(", ", missing.Take(10))})");
        return received;
    }

    /// <summary>
    /// Per document, changes arrive in etag order. At-least-once allows re-sends: after a crash the relay
    /// replays from its last confirmed position, so a suffix already sent may come again. What must hold
    /// is that each etag's first arrival is in order (a consumer skips etags it has already applied).
    /// </summary>
    public static void AssertEtagOrderPerKey(IEnumerable<ChangeEvent> changes)
    {
        foreach (var perKey in changes.GroupBy(c => c.Id))
        {
            var firstArrivals = perKey.Select(c => c.Etag).Distinct().ToList();
            for (var i = 1; i < firstArrivals.Count; i++)
                Assert.True(firstArrivals[i] > firstArrivals[i - 1], $"{perKey.Key}: etag {firstArrivals[i]} first arrived after {firstArrivals[i - 1]}");
        }
    }
}
