using System.Text.Json;
using Magpie.Contracts.Documents;
using Magpie.Query.Operations;
using Magpie.Query.Rql;
using Magpie.Scripting;

namespace Magpie.Tests.Operations;

/// <summary>The update-by-query writer on its own: never overwrites a document changed since it was read, and keeps what it did not change as written.</summary>
[Trait("Category", "Fast")]
public sealed class QueryOperationTests
{
    private static JsonElement Doc(string id, long etag, string body) =>
        JsonDocument.Parse(body.TrimEnd('}') + $", \"@metadata\": {{ \"@id\": \"{id}\", \"@etag\": {etag}, \"@collection\": \"Posts\" }} }}").RootElement.Clone();

    /// <summary>A store of one document: writes guarded by its etag, which every write moves on.</summary>
    private sealed class OneDocument(JsonElement document) : IDocumentWriter, IDocumentLookup
    {
        public JsonElement Current = document;
        public List<string> Written { get; } = [];
        public Action? BeforeWrite;

        private long Etag => Current.GetProperty("@metadata").GetProperty("@etag").GetInt64();

        public Task<IReadOnlyList<GuardedOutcome>> WriteAsync(IReadOnlyList<GuardedWrite> writes, CancellationToken ct = default)
        {
            BeforeWrite?.Invoke();
            BeforeWrite = null;
            var w = writes.Single();
            if (w.IfMatch != Etag) return Task.FromResult<IReadOnlyList<GuardedOutcome>>([new GuardedOutcome(w.Id, GuardedWriteResult.Changed)]);
            Written.Add(w.Json ?? "(deleted)");
            if (w.Json is null) return Task.FromResult<IReadOnlyList<GuardedOutcome>>([new GuardedOutcome(w.Id, GuardedWriteResult.Written, Etag)]);
            var next = System.Text.Json.Nodes.JsonNode.Parse(w.Json!)!.AsObject();
            var etag = Etag + 1;
            next["@metadata"]!["@id"] = w.Id;
            next["@metadata"]!["@etag"] = etag;
            Current = JsonDocument.Parse(next.ToJsonString()).RootElement.Clone();
            return Task.FromResult<IReadOnlyList<GuardedOutcome>>([new GuardedOutcome(w.Id, GuardedWriteResult.Written, Etag)]);
        }

        public ValueTask<JsonElement?> GetAsync(string id, CancellationToken ct = default) => ValueTask.FromResult<JsonElement?>(Current);
    }

    private static QueryOperation Update(string rql, OneDocument store, string id = "op1") =>
        new(id, RqlParser.Parse(rql, null), store, store, ScriptLimits.Default);

    [Fact]
    public async Task A_document_changed_after_it_was_read_is_read_again_and_updated_as_it_is_now()
    {
        var read = Doc("posts/1", 5, """{ "Score": 1, "Title": "caf\u00e9" }""");
        var store = new OneDocument(read);
        // Someone else writes between the operation's read and its write.
        store.BeforeWrite = () => store.Current = Doc("posts/1", 6, """{ "Score": 10, "Title": "caf\u00e9" }""");
        var operation = Update("from Posts update { this.Score += 1; }", store);
        await operation.WriteAsync([read], CancellationToken.None);

        var written = JsonDocument.Parse(store.Written.Single()).RootElement;
        Assert.Equal(11, written.GetProperty("Score").GetInt32());   // 10 + 1: never 1 + 1 over the other write
        Assert.Equal((1L, 0L, 0L), (operation.Progress.Written, operation.Progress.Skipped, operation.Progress.Failed));
    }

    [Theory]
    [InlineData("from Posts where Score > 5 delete")]
    [InlineData("from Posts where Score > 5 update { this.Seen = true; }")]
    public async Task A_document_changed_out_of_the_match_after_it_was_read_is_left_alone(string rql)
    {
        // The probe's: acknowledged patches that took documents out of the match were deleted anyway (31 of 31).
        var read = Doc("posts/1", 5, """{ "Score": 10 }""");
        var store = new OneDocument(read);
        store.BeforeWrite = () => store.Current = Doc("posts/1", 6, """{ "Score": 1 }""");
        var query = RqlParser.Parse(rql, null);
        var condition = OperationCondition.For(query, null, new Magpie.Indexer.Lucene.LuceneDocumentFilters(ScriptLimits.Default), null);
        Assert.NotNull(condition);
        var operation = new QueryOperation("op2", query, store, store, ScriptLimits.Default, condition);
        await operation.WriteAsync([read], CancellationToken.None);
        Assert.Empty(store.Written);
        Assert.Equal((0L, 1L, 0L), (operation.Progress.Written, operation.Progress.Skipped, operation.Progress.Failed));

        // Changed but still matching: written as it is now.
        store.Current = read;
        store.BeforeWrite = () => store.Current = Doc("posts/1", 6, """{ "Score": 7 }""");
        operation = new QueryOperation("op3", query, store, store, ScriptLimits.Default, condition);
        await operation.WriteAsync([read], CancellationToken.None);
        Assert.Equal(1L, operation.Progress.Written);
    }

    [Fact]
    public async Task What_the_update_leaves_alone_keeps_its_text_and_the_document_is_marked_once()
    {
        var read = Doc("posts/1", 5, """{ "Score": 1.50, "Title": "caf\u00e9", "Big": 12345678901234567890, "Tags": ["a", "b"] }""");
        var store = new OneDocument(read);
        var operation = Update("from Posts as p update { p.Score = p.Score * 2; p.Tags.push('c'); }", store, "op7");
        await operation.WriteAsync([read], CancellationToken.None);
        var written = store.Written.Single();
        Assert.Contains("\"Title\":\"caf\\u00e9\"", written);            // the escape as written
        Assert.Contains("\"Big\":12345678901234567890", written);        // not rounded through a double
        Assert.Contains("\"Score\":3", written);
        Assert.Contains("\"Tags\":[\"a\",\"b\",\"c\"]", written);
        Assert.Contains("\"@operation\":\"op7\"", written);
        Assert.DoesNotContain("@etag", written);

        // The same operation again (a resumed run) leaves the document it already updated alone.
        await operation.WriteAsync([store.Current], CancellationToken.None);
        Assert.Single(store.Written);
        Assert.Equal(1, operation.Progress.Skipped);
    }

    [Fact]
    public async Task A_document_whose_update_throws_fails_alone_with_the_reason()
    {
        var read = Doc("posts/1", 5, """{ "Score": 1 }""");
        var store = new OneDocument(read);
        var operation = Update("from Posts update { throw new Error('no'); }", store);
        await operation.WriteAsync([read], CancellationToken.None);
        Assert.Empty(store.Written);
        Assert.Equal(1, operation.Progress.Failed);
        Assert.Contains("posts/1", operation.Progress.Errors.Single());
    }
}
