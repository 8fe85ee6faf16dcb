using System.Text;
using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.Ingest.Documents;

namespace Magpie.Tests.Sinks;

/// <summary>What a queue sink's writes rely on from the store: each message all or nothing, and each message id applied once, across a crash.</summary>
public sealed class StoreMessageWriterTests : IDisposable
{
    private readonly string _dir = Directory.CreateTempSubdirectory("magpie-sinkstore-").FullName;

    private Task<DocumentStore> Open() => DocumentStore.OpenAsync(new DocumentStoreOptions { Directory = _dir, LogMemoryBytes = 1L << 26 });

    private static MessageWrites Message(string id, params MessageWrite[] writes) => new(id, writes);

    private static MessageWrite Put(string id, string json) => new(MessageWriteMethod.Put, id, json);

    private static MessageWrite Append(string id, int n) => new(MessageWriteMethod.Patch, id, $$"""[{"op":"add","path":"/seen/-","value":{{n}}}]""");

    private static async Task<int[]> SeenAsync(DocumentStore store, string id) =>
        JsonDocument.Parse((await store.GetAsync(id))!.Json).RootElement.GetProperty("seen").EnumerateArray().Select(e => e.GetInt32()).ToArray();

    [Fact]
    public async Task A_message_redelivered_after_a_crash_is_recognised_and_its_patch_is_not_applied_twice()
    {
        await using (var store = await Open())
        {
            var writer = new StoreMessageWriter(store);
            await store.WriteAsync([WriteCommand.Put("buckets/1", Encoding.UTF8.GetBytes("""{"seen":[]}"""))], atomic: true);
            var first = await writer.WriteAsync("sink:t", [Message("m1", Append("buckets/1", 1)), Message("m2", Append("buckets/1", 2))]);
            Assert.All(first, o => Assert.Equal(MessageWriteResult.Applied, o.Result));
        }
        await using (var store = await Open())
        {
            var writer = new StoreMessageWriter(store);
            var again = await writer.WriteAsync("sink:t", [Message("m2", Append("buckets/1", 2)), Message("m3", Append("buckets/1", 3)), Message("m3", Append("buckets/1", 3))]);
            Assert.Equal([MessageWriteResult.AlreadyApplied, MessageWriteResult.Applied, MessageWriteResult.AlreadyApplied], again.Select(o => o.Result));
            Assert.Equal(new[] { 1, 2, 3 }, await SeenAsync(store, "buckets/1"));
            // Another sink's ledger is its own: the same id there is a new message.
            var other = await writer.WriteAsync("sink:u", [Message("m1", Append("buckets/1", 4))]);
            Assert.Equal(MessageWriteResult.Applied, other[0].Result);
            await store.CheckpointAsync();
        }
        await using (var store = await Open())
        {
            var redelivered = await new StoreMessageWriter(store).WriteAsync("sink:t", [Message("m1", Append("buckets/1", 1))]);
            Assert.Equal(MessageWriteResult.AlreadyApplied, redelivered[0].Result);
            Assert.Equal(new[] { 1, 2, 3, 4 }, await SeenAsync(store, "buckets/1"));
        }
    }

    [Fact]
    public async Task A_refused_write_costs_its_own_message_only_and_none_of_that_message_writes_land()
    {
        await using var store = await Open();
        var writer = new StoreMessageWriter(store);
        var outcomes = await writer.WriteAsync("sink:t", [
            Message("ok1", Put("orders/1", """{"Total":1}""")),
            Message("bad", Put("orders/2", """{"Total":2}"""), Append("missing/1", 2)),
            Message("ok2", Put("orders/3", """{"Total":3,"seen":[]}"""), Append("orders/3", 9)),
            Message("notjson", Put("orders/4", "[1,2]")),
        ]);
        Assert.True(outcomes[2].Result == MessageWriteResult.Applied, outcomes[2].Reason);
        Assert.Equal([MessageWriteResult.Applied, MessageWriteResult.Refused, MessageWriteResult.Applied, MessageWriteResult.Refused], outcomes.Select(o => o.Result));
        Assert.Contains("write [1] (patch missing/1)", outcomes[1].Reason);
        Assert.Contains("write [0] (put orders/4)", outcomes[3].Reason);
        Assert.NotNull(await store.GetAsync("orders/1"));
        Assert.Null(await store.GetAsync("orders/2"));   // the refused message's put did not land either
        Assert.Equal(new[] { 9 }, await SeenAsync(store, "orders/3"));
        // A refused message is not in the ledger: sent again once its target exists, it applies.
        await store.WriteAsync([WriteCommand.Put("missing/1", Encoding.UTF8.GetBytes("""{"seen":[]}"""))], atomic: true);
        var retried = await writer.WriteAsync("sink:t", [Message("bad", Put("orders/2", """{"Total":2}"""), Append("missing/1", 2))]);
        Assert.Equal(MessageWriteResult.Applied, retried[0].Result);
    }

    public void Dispose() => Directory.Delete(_dir, recursive: true);
}
