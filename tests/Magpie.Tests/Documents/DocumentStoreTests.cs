using System.Text;
using Magpie.Ingest.Documents;

namespace Magpie.Tests.Documents;

/// <summary>The FASTER-backed store in-process: etags, atomicity, patches, recovery from checkpoint + log.</summary>
[Trait("Category", "Fast")]
public sealed class DocumentStoreTests : IAsyncLifetime
{
    private readonly string _dir = Directory.CreateTempSubdirectory("magpie-store-").FullName;
    private DocumentStore _store = null!;

    public async Task InitializeAsync() => _store = await Open();

    public async Task DisposeAsync()
    {
        await _store.DisposeAsync();
        Directory.Delete(_dir, recursive: true);
    }

    private Task<DocumentStore> Open() => DocumentStore.OpenAsync(new DocumentStoreOptions { Directory = _dir, LogMemoryBytes = 1L << 26 });

    private static byte[] Json(string s) => Encoding.UTF8.GetBytes(s);

    private static Microsoft.AspNetCore.JsonPatch.SystemTextJson.JsonPatchDocument Patch(string json) => DocumentPatcher.Parse(Json(json), out _)!;

    [Fact]
    public async Task Concurrent_writers_get_unique_strictly_increasing_etags()
    {
        var etags = await Task.WhenAll(Enumerable.Range(0, 8).Select(w => Task.Run(async () =>
        {
            var mine = new List<long>();
            for (var i = 0; i < 200; i++)
                mine.Add((await _store.WriteAsync([WriteCommand.Put($"c/{w}-{i}", Json("{}"))], atomic: true))[0].Etag!.Value);
            return mine;
        })));
        foreach (var perWriter in etags) Assert.Equal(perWriter.Order(), perWriter);
        var all = etags.SelectMany(e => e).ToList();
        Assert.Equal(all.Count, all.Distinct().Count());
        Assert.Equal(1600, _store.Stats().Documents);
        Assert.Equal(all.Max(), _store.LastEtag);
    }

    [Fact]
    public async Task Ids_compare_case_insensitively_and_a_document_keeps_the_id_it_was_first_written_with()
    {
        await _store.WriteAsync([WriteCommand.Put("Orders/42", Json("""{"Freight":1}"""))], atomic: true);
        var again = await _store.WriteAsync([WriteCommand.Put("orders/42", Json("""{"Freight":2}""")), WriteCommand.ApplyPatch("ORDERS/42", Patch("""[{"op":"replace","path":"/Freight","value":3}]"""))], atomic: true);
        Assert.All(again, o => Assert.Equal("Orders/42", o.Id));
        Assert.False(again[0].Created);
        var stored = await _store.GetAsync("oRdErS/42");
        Assert.Equal(("Orders/42", "Orders", """{"Freight":3}"""), (stored!.Id, stored.Collection, Encoding.UTF8.GetString(stored.Json)));
        Assert.Equal(1, _store.Stats().Documents);
        Assert.Equal(1, _store.Stats().Collections["Orders"]);
        await _store.WriteAsync([WriteCommand.Delete("ORDERS/42")], atomic: true);
        Assert.Null(await _store.GetAsync("Orders/42"));
        Assert.Equal(0, _store.Stats().Documents);
    }

    [Fact]
    public async Task A_store_whose_index_predates_case_insensitive_ids_rebuilds_it_from_the_log()
    {
        await _store.WriteAsync([WriteCommand.Put("Users/1", Json("{}")), WriteCommand.Put("users/2", Json("{}")), WriteCommand.Put("Posts/1", Json("{}"))], atomic: true);
        await _store.WriteAsync([WriteCommand.Delete("Posts/1")], atomic: true);
        await _store.CheckpointAsync();
        await _store.DisposeAsync();
        // What an earlier version's state file says: no FoldedIds, so its checkpoint keys ids as written.
        var state = Path.Combine(_dir, "store-state.json");
        var node = System.Text.Json.Nodes.JsonNode.Parse(File.ReadAllText(state))!.AsObject();
        Assert.True(node.Remove("FoldedIds"));
        File.WriteAllText(state, node.ToJsonString());

        _store = await Open();
        Assert.Equal("Users/1", (await _store.GetAsync("USERS/1"))!.Id);
        Assert.Equal("users/2", (await _store.GetAsync("Users/2"))!.Id);
        Assert.Null(await _store.GetAsync("posts/1"));
        Assert.Equal(2, _store.Stats().Documents);
        Assert.Contains("\"FoldedIds\":true", File.ReadAllText(state));
    }

    [Fact]
    public async Task Patches_read_back_documents_written_long_before()
    {
        // Enough documents that the early ones are only on disk, then patch every one of them in batches.
        var pad = new string('p', 900);
        for (var b = 0; b < 40; b++)
            await _store.WriteAsync(Enumerable.Range(b * 100, 100).Select(i => WriteCommand.Put($"users/{i}", Json($$"""{"Badges":[],"pad":"{{pad}}"}"""))).ToList(), atomic: true);
        for (var b = 0; b < 40; b++)
            await _store.WriteAsync(Enumerable.Range(b * 100, 100).Select(i => WriteCommand.ApplyPatch($"users/{i}", Patch("""[{"op":"add","path":"/Badges/-","value":{"Name":"x"}}]"""))).ToList(), atomic: true);
        var doc = await _store.GetAsync("users/0");
        Assert.Contains("\"Name\":\"x\"", Encoding.UTF8.GetString(doc!.Json));
    }

    [Fact]
    public async Task Concurrent_patch_batches_of_the_same_documents_all_apply()
    {
        await _store.WriteAsync(Enumerable.Range(0, 10).Select(i => WriteCommand.Put($"p/{i}", Json("""{"Items":[]}"""))).ToList(), atomic: true);
        var patch = Patch("""[{"op":"add","path":"/Items/-","value":1}]""");
        await Task.WhenAll(Enumerable.Range(0, 4).Select(_ => Task.Run(async () =>
        {
            // Each batch patches a document whose latest version another batch may not have committed yet.
            for (var round = 0; round < 25; round++)
                await _store.WriteAsync(Enumerable.Range(0, 10).Select(i => WriteCommand.ApplyPatch($"p/{i}", patch)).ToList(), atomic: true);
        }))).WaitAsync(TimeSpan.FromSeconds(60));
        foreach (var i in Enumerable.Range(0, 10))
            Assert.Equal(100, System.Text.Json.JsonDocument.Parse((await _store.GetAsync($"p/{i}"))!.Json).RootElement.GetProperty("Items").GetArrayLength());
    }

    [Fact]
    public async Task Browsing_page_by_page_visits_every_latest_version_once_and_ends()
    {
        for (var i = 0; i < 5; i++) await _store.WriteAsync([WriteCommand.Put($"walk/{i}", Json("{}"))], atomic: true);
        await _store.WriteAsync([WriteCommand.Put("walk/0", Json("""{"v":2}""")), WriteCommand.Put("other/1", Json("{}"))], atomic: true);
        var seen = new List<string>();
        long cursor = 0;
        for (var pages = 0; ; pages++)
        {
            Assert.True(pages < 10, "paging did not end");
            var page = await _store.BrowseAsync("walk", 0, 2, cursor);
            seen.AddRange(page.Results.Select(d => d.Id));
            if (page.NextCursor is not { } next) break;
            cursor = next;
        }
        Assert.Equal(["walk/1", "walk/2", "walk/3", "walk/4", "walk/0"], seen);
    }

    [Fact]
    public async Task Ids_whose_pointers_spilled_out_of_memory_are_still_found_and_updated()
    {
        var dir = Directory.CreateTempSubdirectory("magpie-spill-").FullName;
        // A 64 KB id index in memory: most pointers live on disk and reads of them go pending.
        await using (var store = await DocumentStore.OpenAsync(new DocumentStoreOptions { Directory = dir, IndexMemoryBytes = 1 << 16, LogMemoryBytes = 1L << 26 }))
        {
            for (var b = 0; b < 20; b++)
                await store.WriteAsync(Enumerable.Range(b * 500, 500).Select(i => WriteCommand.Put($"spill/{i}", Json($$"""{"n":{{i}}}"""))).ToList(), atomic: true);
            await store.WriteAsync(Enumerable.Range(0, 100).Select(i => WriteCommand.Put($"spill/{i * 97}", Json("""{"updated":true}"""))).ToList(), atomic: true);
            Assert.Equal(10_000, store.Stats().Documents);
            for (var i = 0; i < 10_000; i += 37)
                Assert.Equal($"spill/{i}", (await store.GetAsync($"spill/{i}"))?.Id);
            Assert.Contains("updated", Encoding.UTF8.GetString((await store.GetAsync("spill/9603"))!.Json));
        }
        Directory.Delete(dir, recursive: true);
    }

    [Fact]
    public async Task Source_positions_are_stored_with_the_writes_survive_reopening_and_never_move_back()
    {
        const string source = "magpie.documents/0";
        var commands = new List<WriteCommand>
        {
            WriteCommand.Put("src/1", Json("{}")),
            WriteCommand.Put("src/2", Json("{}"), ifMatch: 999),   // rejected: stays re-evaluable
            WriteCommand.Put("src/3", Json("{}")),
        };
        await _store.WriteAsync(commands, atomic: false, progress: new SourceProgress(
            new Dictionary<string, long> { [source] = 13 }, [(source, 10), (source, 11), (source, 12)]));
        await _store.DisposeAsync();
        _store = await Open();   // no checkpoint since the write: the position comes back from the log

        var position = _store.SourcePositionOf(source)!;
        Assert.True(position.Applied(10));
        Assert.False(position.Applied(11));
        Assert.True(position.Applied(12));
        Assert.False(position.Applied(13));
        Assert.Equal(2, _store.LastEtag);   // position entries take no etag: two puts only
        Assert.Equal(2, _store.Stats().Documents);

        // A shorter redelivered batch (offset 10 only) must not move the position back.
        await _store.WriteAsync([], atomic: false, progress: new SourceProgress(new Dictionary<string, long> { [source] = 11 }, []));
        Assert.True(_store.SourcePositionOf(source)!.Applied(12));
        Assert.False(_store.SourcePositionOf(source)!.Applied(11));
        await _store.CheckpointAsync();
        await _store.DisposeAsync();
        _store = await Open();   // and from the checkpoint
        Assert.True(_store.SourcePositionOf(source)!.Applied(12));
        Assert.False(_store.SourcePositionOf(source)!.Applied(11));
    }

    [Fact]
    public async Task A_rejected_atomic_batch_writes_nothing()
    {
        await _store.WriteAsync([WriteCommand.Put("a/1", Json("""{"v":1}"""))], atomic: true);
        var before = _store.Stats();
        var e = await Assert.ThrowsAsync<WriteRejectedException>(() => _store.WriteAsync(
            [WriteCommand.Put("a/2", Json("{}")), WriteCommand.ApplyPatch("a/missing", Patch("""[{"op":"add","path":"/x","value":1}]"""))], atomic: true));
        Assert.Equal(1, e.Index);
        Assert.Equal(WriteErrorKind.NotFound, e.Outcome.Error!.Kind);
        Assert.Equal(before, _store.Stats() with { Collections = before.Collections });
        Assert.Null(await _store.GetAsync("a/2"));
    }

    [Fact]
    public async Task Non_atomic_batches_report_each_failure_and_apply_the_rest()
    {
        var outcomes = await _store.WriteAsync(
        [
            WriteCommand.Put("b/1", Json("{}")),
            WriteCommand.Put("b/2", Json("{}"), ifMatch: 12345),
            WriteCommand.ApplyPatch("b/1", Patch("""[{"op":"test","path":"/nope","value":1}]""")),
            WriteCommand.Delete("b/never"),
        ], atomic: false);
        Assert.True(outcomes[0].Succeeded);
        Assert.Equal(WriteErrorKind.Conflict, outcomes[1].Error!.Kind);
        Assert.Equal(WriteErrorKind.PatchFailed, outcomes[2].Error!.Kind);
        Assert.True(outcomes[3].Succeeded);
        Assert.Null(outcomes[3].Etag);
        Assert.NotNull(await _store.GetAsync("b/1"));
    }

    [Fact]
    public async Task Reopening_recovers_documents_counts_and_etags_from_checkpoint_and_log_tail()
    {
        await _store.WriteAsync([WriteCommand.Put("Users/1", Json("{}")), WriteCommand.Put("users/2", Json("{}"))], atomic: true);
        await _store.CheckpointAsync();
        // After the checkpoint: only in the log, replayed on open.
        await _store.WriteAsync([WriteCommand.Put("users/3", Json("""{"@metadata":{"@collection":"Admins"}}""")), WriteCommand.Delete("users/2")], atomic: true);
        var before = _store.Stats();
        await _store.DisposeAsync();

        _store = await Open();
        var after = _store.Stats();
        Assert.Equal(before.LastEtag, after.LastEtag);
        Assert.Equal(2, after.Documents);
        Assert.Equal(1, after.Collections["users"]);
        Assert.Equal(1, after.Collections["Admins"]);
        Assert.Equal("Admins", (await _store.GetAsync("users/3"))!.Collection);
        Assert.Null(await _store.GetAsync("users/2"));
        var next = (await _store.WriteAsync([WriteCommand.Put("users/4", Json("{}"))], atomic: true))[0].Etag;
        Assert.Equal(before.LastEtag + 1, next);
    }
}
