using System.Runtime.CompilerServices;
using System.Threading.Channels;
using Magpie.Contracts.Changes;

namespace Magpie.Indexer.Maps;

/// <summary>
/// Kafka mode, one shard of an index whose maps <c>load()</c>: the shard's own feed, and beside it the ids of the documents changed
/// on every partition of <c>magpie.changes</c> (<see cref="ChangeBatch.ChangedElsewhere"/>). A document a map loaded may live on any
/// partition; when it changes, the documents of this shard that loaded it are mapped again (<see cref="DocumentLoads"/>). This is
/// how a Kafka Streams global table is fed — every instance reads the whole source topic — except that only the ids are used: the
/// loaded documents themselves are read from the store (the ingest), so nothing here grows with the loaded collections.
/// Both positions travel in one <see cref="ChangeFeedPosition"/> (every partition's under <see cref="Prefix"/>): the worker's
/// commit keeps them together, a restart resumes both, and staleness counts the other partitions too (<c>IndexWorker.Covers</c>).
/// </summary>
public sealed class LoadFollowingFeed(IChangeFeed shard, IChangeFeed everyPartition) : IChangeFeed
{
    /// <summary>How the position of every partition's feed is keyed beside the shard's own: <c>loads/3</c>.</summary>
    public const string Prefix = "loads/";

    public async IAsyncEnumerable<ChangeBatch> ReadAsync(ChangeFeedPosition from, int maxBatchSize, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        var own = Own(from);
        var others = Followed(from);
        // A shard read from its beginning (a build, a rebuild) maps every document against the store as it is now, which holds
        // every change already in the feed: only what comes after needs following.
        var fresh = others.Next.Count == 0;
        if (fresh) others = (await everyPartition.EndAsync(cancellationToken))?.After ?? ChangeFeedPosition.Beginning;
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var merged = Channel.CreateBounded<(bool Own, ChangeBatch Batch)>(new BoundedChannelOptions(1) { SingleReader = true });
        async Task Pump(IChangeFeed feed, ChangeFeedPosition at, bool isOwn)
        {
            try
            {
                await foreach (var batch in feed.ReadAsync(at, maxBatchSize, stop.Token))
                    await merged.Writer.WriteAsync((isOwn, batch), stop.Token);
                merged.Writer.TryComplete();
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested) { merged.Writer.TryComplete(); }
            catch (Exception e) { merged.Writer.TryComplete(e); }
        }
        var pumps = Task.WhenAll(Task.Run(() => Pump(shard, own, true)), Task.Run(() => Pump(everyPartition, others, false)));
        try
        {
            if (fresh) yield return new ChangeBatch([], Merged(own, others));
            await foreach (var (isOwn, batch) in merged.Reader.ReadAllAsync(cancellationToken))
            {
                if (isOwn)
                {
                    own = batch.After;
                    yield return batch with { After = Merged(own, others) };
                }
                else
                {
                    others = batch.After;
                    yield return new ChangeBatch([], Merged(own, others)) { ChangedElsewhere = batch.Changes.Select(c => c.Id).ToList() };
                }
            }
        }
        finally
        {
            stop.Cancel();
            await pumps;
        }
    }

    public long? Backlog(ChangeFeedPosition position, long lastEtag) => shard.Backlog(Own(position), lastEtag);

    public bool CanResume(ChangeFeedPosition position) => shard.CanResume(Own(position));

    public IDisposable Track(string reader, Func<ChangeFeedPosition> durable) => shard.Track(reader, () => Own(durable()));

    public async Task<ChangeBatch?> EndAsync(CancellationToken cancellationToken) =>
        await shard.EndAsync(cancellationToken) is { } end && await everyPartition.EndAsync(cancellationToken) is { } all
            ? end with { After = Merged(end.After, all.After) }
            : null;

    private static ChangeFeedPosition Own(ChangeFeedPosition position) =>
        new(position.Next.Where(p => !p.Key.StartsWith(Prefix, StringComparison.Ordinal)).ToDictionary());

    /// <summary>How far a position has followed every partition's changes (partition → next offset; empty: not following).</summary>
    public static ChangeFeedPosition Followed(ChangeFeedPosition position) =>
        new(position.Next.Where(p => p.Key.StartsWith(Prefix, StringComparison.Ordinal)).ToDictionary(p => p.Key[Prefix.Length..], p => p.Value));

    private static ChangeFeedPosition Merged(ChangeFeedPosition own, ChangeFeedPosition others)
    {
        var next = new Dictionary<string, long>(own.Next);
        foreach (var (partition, offset) in others.Next) next[Prefix + partition] = offset;
        return new ChangeFeedPosition(next);
    }
}
