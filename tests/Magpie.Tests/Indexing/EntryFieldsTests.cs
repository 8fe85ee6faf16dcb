using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Lucene;
using Microsoft.Extensions.Logging.Abstractions;
using Magpie.Contracts.Search;
using Magpie.Indexer.Maps;
using Magpie.Scripting;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Indexing;

/// <summary>Map output through the field rules into real Lucene: what each kind of value is searchable as.</summary>
[Trait("Category", "Fast")]
public sealed class EntryFieldsTests
{
    [Fact]
    public async Task A_document_kept_in_the_index_comes_back_as_the_bytes_it_was_written_with_and_its_metadata()
    {
        // What a Kafka-mode map index keeps (no document store beside it): the document's own bytes, stored and read as UTF-8.
        const string written = """{"Title":"Caf\u00e9 cr\u00e8me","Price":1.50,"Big":12345678901234567890,"At":"2011-10-11T19:42:20.720+02:00","Tags":["a","b"]}""";
        var definition = new IndexDefinition { Maps = ["map('Posts', p => ({ Title: p.Title }))"] };
        var stage = new Magpie.Indexer.Indexing.Stages.MapStage(definition, ScriptLimits.Default, new Magpie.Indexer.Indexing.IndexStatus("t"), storeSource: true);
        var modified = new DateTimeOffset(2026, 11, 25, 12, 0, 0, TimeSpan.Zero);
        var change = new ChangeEvent("posts/1", "Posts", 7, ChangeOp.Put, modified, JsonDocument.Parse(written).RootElement);
        var mapped = stage.Map(new ChangeBatch([change], ChangeFeedPosition.Beginning));
        using var host = new LuceneEngine(NullLogger.Instance);
        var dir = Directory.CreateTempSubdirectory("magpie-lucene-").FullName;
        var index = host.Open(dir);
        await index.WriteAsync([], mapped.Documents);
        await index.RefreshAsync();

        var hit = (await index.SearchAsync(new SearchRequest(SearchQuery.All, [], 1, StoredFields: [EntryFields.Source]))).Hits.Single();
        var source = Assert.IsType<byte[]>(hit.Stored[EntryFields.Source].Single());
        var text = System.Text.Encoding.UTF8.GetString(source);
        Assert.StartsWith(written[..^1] + ",\"@metadata\":{", text);
        Assert.EndsWith("\"@id\":\"posts/1\",\"@collection\":\"Posts\",\"@etag\":7,\"@last-modified\":\"2026-11-25T12:00:00+00:00\"}}", text);
        index.Close();
        Directory.Delete(dir, recursive: true);
    }

    [Fact]
    public async Task Strings_numbers_dates_booleans_nulls_and_arrays_are_searchable_the_way_RavenDB_users_expect()
    {
        var definition = new IndexDefinition
        {
            Maps = ["map('Posts', p => ({ Title: p.Title, Tags: p.Tags, Score: p.Score, Created: p.Created, Answered: p.Answered, Views: p.Views === undefined ? null : p.Views, Owner: p.Owner }))"],
            Fields = new() { ["Title"] = new() { Indexing = IndexFieldOptions.Search, Store = true }, ["Tags"] = new() { Store = true } },
        };
        var maps = MapScript.Compile(definition.Maps, ScriptLimits.Default);
        var docs = new Dictionary<string, string>
        {
            ["posts/1"] = """{"Title":"Sources in Answers","Tags":["Discussion","Sources"],"Score":18,"Created":"2011-10-11T19:42:20.713","Answered":true,"Views":223,"Owner":{"Name":"Ann"}}""",
            ["posts/2"] = """{"Title":"Tag synonyms","Tags":["tag-synonyms"],"Score":-2.5,"Created":"2012-03-01T08:00:00","Answered":false}""",
            ["posts/3"] = """{"Title":"discussion about SOURCES","Tags":["discussion"],"Score":4,"Created":"2012-12-31","Answered":true,"Views":10}""",
        };
        using var host = new LuceneEngine(NullLogger.Instance);
        var dir = Directory.CreateTempSubdirectory("magpie-lucene-").FullName;
        var index = host.Open(dir);
        await index.WriteAsync([], docs.Select(d => new IndexedDocument(d.Key,
            maps.Run(new ChangeEvent(d.Key, "posts", 1, ChangeOp.Put, DateTimeOffset.UtcNow, JsonDocument.Parse(d.Value).RootElement))
                .Select(e => EntryMapping.From(e, definition)).ToList())).ToList());
        await index.RefreshAsync();

        async Task<string[]> Ids(SearchQuery q) => (await index.SearchAsync(new SearchRequest(q, [], 10))).Hits.Select(h => h.Id).Order().ToArray();

        Assert.Equal(["posts/1", "posts/3"], await Ids(new TermQuery("Tags", "discussion")));            // exact is case-insensitive…
        Assert.Equal(["posts/1"], await Ids(new TermQuery("Tags" + EntryFields.CaseSensitive, "Discussion"))); // …exact() is not
        Assert.Equal(["posts/1", "posts/3"], await Ids(new FullTextQuery("Title", "sources")));         // search: analyzed
        Assert.Empty(await Ids(new TermQuery("Title", "sources in answers")));                          // (no keyword term for search fields)
        Assert.Equal(["posts/2", "posts/3"], await Ids(new DoubleRangeQuery("Score" + EntryFields.Number, double.NegativeInfinity, 10)));
        var y2012 = new DateTime(2012, 1, 1).Ticks;
        Assert.Equal(["posts/2", "posts/3"], await Ids(new LongRangeQuery("Created" + EntryFields.Ticks, y2012, long.MaxValue)));
        Assert.Equal(["posts/1", "posts/3"], await Ids(new TermQuery("Answered", "true")));
        Assert.Equal(["posts/2"], await Ids(new TermQuery("Views", EntryFields.NullValue)));
        Assert.Equal(["posts/1"], await Ids(new TermQuery("Owner", """{"name":"ann"}""")));
        Assert.Equal(["posts/1", "posts/2", "posts/3"], await Ids(new ExistsQuery("Created" + EntryFields.Ticks)));

        var stored = (await index.SearchAsync(new SearchRequest(new TermQuery("Tags", "tag-synonyms"), [], 1))).Hits.Single().Stored;
        Assert.Equal("\"Tag synonyms\"", stored["Title" + EntryFields.Stored].Single());
        Assert.Equal("""["tag-synonyms"]""", stored["Tags" + EntryFields.Stored].Single());
        Assert.False(stored.ContainsKey("Score" + EntryFields.Stored));
        Directory.Delete(dir, recursive: true);
    }

    [Theory]
    [InlineData("2011-10-11T19:42:20.713", true)]
    [InlineData("2012-12-31", true)]
    [InlineData("2012-12-31T10:00:00+02:00", true)]
    [InlineData("12/31/2012", false)]
    [InlineData("2012", false)]
    [InlineData("hello", false)]
    [InlineData("2012/12/31", false)]
    [InlineData("A012-12-31", false)]
    [InlineData("a sentence, not a date", false)]
    [InlineData("2024-01-01T00:00:00.123456789Z", true)]
    public void Only_ISO_dates_count_as_dates(string value, bool isDate) => Assert.Equal(isDate, EntryFields.TicksOf(value) is not null);
}
