using System.Text;
using Magpie.Contracts.Changes;
using Magpie.Ingest.Changes;
using Magpie.Ingest.Documents;

namespace Magpie.Tests.Documents;

/// <summary>The embedded change feed: the committed FasterLog, read from a position and resumed from the one it returns.</summary>
[Trait("Category", "Fast")]
public sealed class EmbeddedChangeFeedTests : IAsyncLifetime
{
    private readonly string _dir = Directory.CreateTempSubdirectory("magpie-feed-").FullName;
    private DocumentStore _store = null!;

    public async Task InitializeAsync() => _store = await DocumentStore.OpenAsync(new DocumentStoreOptions { Directory = _dir, LogMemoryBytes = 1L << 26 });

    public async Task DisposeAsync()
    {
        await _store.DisposeAsync();
        Directory.Delete(_dir, recursive: true);
    }

    [Fact]
    public async Task Changes_arrive_in_etag_order_with_documents_and_deletes_and_resume_from_the_returned_position()
    {
        var feed = new EmbeddedChangeFeed(new ChangeLogTail(_store), new ChangeLogReaders());
        await _store.WriteAsync([WriteCommand.Put("users/1", Encoding.UTF8.GetBytes("""{"Name":"a"}""")), WriteCommand.Put("users/2", "{}"u8.ToArray())], atomic: true);
        await _store.WriteAsync([WriteCommand.Delete("users/1")], atomic: true);

        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var (first, position) = await Take(feed, ChangeFeedPosition.Beginning, 3, cts.Token);
        Assert.Equal([1L, 2L, 3L], first.Select(c => c.Etag));
        Assert.Equal("a", first[0].Document!.Value.GetProperty("Name").GetString());
        Assert.Equal("users", first[0].Collection);
        Assert.Equal(ChangeOp.Delete, first[2].Op);
        Assert.Null(first[2].Document);

        // A reader that resumes from its position sees only what came after, including writes made while it waits.
        var reading = Take(feed, position, 1, cts.Token);
        await _store.WriteAsync([WriteCommand.Put("users/3", "{}"u8.ToArray())], atomic: true);
        var (next, _) = await reading;
        Assert.Equal("users/3", Assert.Single(next).Id);
        Assert.Equal(4, next[0].Etag);
    }

    private static async Task<(List<ChangeEvent>, ChangeFeedPosition)> Take(IChangeFeed feed, ChangeFeedPosition from, int count, CancellationToken ct)
    {
        var changes = new List<ChangeEvent>();
        await foreach (var batch in feed.ReadAsync(from, 100, ct))
        {
            changes.AddRange(batch.Changes);
            if (changes.Count >= count) return (changes, batch.After);
        }
        throw new InvalidOperationException("feed ended");
    }
}
