using System.Runtime.CompilerServices;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Indexer;
using Magpie.Indexer.Definitions;
using Magpie.Indexer.Indexing;
using Magpie.Indexer.Shards;
using Microsoft.Extensions.Logging.Abstractions;

namespace Magpie.Tests.Indexing;

/// <summary>The registry keeps workers in step with the partitions a process owns, whatever one of them does.</summary>
[Trait("Category", "Fast")]
public sealed class IndexRegistryTests
{
    private const string Index = "Orders/ByCustomer";

    [Fact]
    public async Task A_worker_that_does_not_stop_keeps_no_other_shard_from_starting()
    {
        var dir = Directory.CreateTempSubdirectory("magpie-registry-").FullName;
        using var stuck = new ManualResetEventSlim();
        var shards = new OwnedShards(shard => shard == 0 ? new NeverReturningFeed(stuck) : new QuietFeed()) { Owned = [0, 1] };
        var definitions = new IndexDefinitionStore(new FileDefinitionLog(dir), Magpie.Indexer.MapReduce.DefinitionCompiler.Check);
        await definitions.StartAsync(CancellationToken.None);
        await definitions.PutAsync(Index, new IndexDefinition { Maps = ["map('Orders', o => ({ Customer: o.Customer }))"] }, global::Magpie.Scripting.ScriptLimits.Default);
        var options = new IndexerOptions { DataDir = dir, WorkerStopTimeout = TimeSpan.FromSeconds(1) };
        using var engine = new Magpie.Indexer.Lucene.LuceneEngine(Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
        var registry = new IndexRegistry(definitions, shards, options, engine, NullLoggerFactory.Instance);
        try
        {
            await registry.StartAsync(CancellationToken.None);
            var running = await RunningAsync(registry, [0, 1]);
            Assert.Equal([0, 1], running);

            // Shard 0 goes (its feed is in a call that never returns, like librdkafka#5456), then shard 2 comes.
            shards.Set([1]);
            shards.Set([1, 2]);
            running = await RunningAsync(registry, [1, 2]);
            Assert.Equal([1, 2], running);
        }
        finally
        {
            stuck.Set();
            await registry.DisposeAsync();
        }
    }

    /// <summary>The shards of the index with an open searcher, once they are <paramref name="expected"/> (or after 20 s, whatever they are).</summary>
    private static async Task<int[]> RunningAsync(IndexRegistry registry, int[] expected)
    {
        var deadline = DateTime.UtcNow.AddSeconds(20);
        int[] Open() => ((ILocalShards)registry).Shards(Index).Where(s => s.Searcher is not null).Select(s => s.Shard).Order().ToArray();
        while (DateTime.UtcNow < deadline && !Open().SequenceEqual(expected)) await Task.Delay(50);
        return Open();
    }

    private sealed class OwnedShards(Func<int, IChangeFeed> feeds) : IIndexShards
    {
        public IReadOnlyCollection<int> Owned { get; set; } = [];

        public IReadOnlyCollection<int> Every => [0, 1, 2];

        public event Action? Changed;

        public void Set(int[] owned)
        {
            Owned = owned;
            Changed?.Invoke();
        }

        public IChangeFeed FeedOf(int shard) => feeds(shard);

        public Task StartAsync(CancellationToken ct) => Task.CompletedTask;

        public ValueTask DisposeAsync() => ValueTask.CompletedTask;
    }

    /// <summary>A feed with nothing to read, waiting for changes until cancelled.</summary>
    private sealed class QuietFeed : IChangeFeed
    {
        public async IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize, [EnumeratorCancellation] CancellationToken cancellationToken)
        {
            await Task.Delay(Timeout.Infinite, cancellationToken);
            yield break;
        }
    }

    /// <summary>A feed whose read blocks in a call that does not see cancellation, until the test lets it go.</summary>
    private sealed class NeverReturningFeed(ManualResetEventSlim release) : IChangeFeed
    {
        public async IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize, [EnumeratorCancellation] CancellationToken cancellationToken)
        {
            await Task.Run(release.Wait, CancellationToken.None);
            yield break;
        }
    }
}
