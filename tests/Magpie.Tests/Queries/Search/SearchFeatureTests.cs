using System.Net.Http.Json;
using Magpie.Tests.Http;
using Magpie.Tests.Queries.Conformance;

namespace Magpie.Tests.Queries.Search;

/// <summary>Highlighting, suggestions, more like this and vectors, embedded, on the Stack Exchange sample.</summary>
public sealed class SearchFeatureTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>, IAsyncLifetime
{
    private HttpClient Http => fx.Magpie.Http;

    public Task InitializeAsync() => Http.PutIndexAsync(SearchCases.StoredIndex, SearchCases.StoredDefinition);

    public Task DisposeAsync() => Task.CompletedTask;

    [Fact]
    public Task Highlights_mark_the_matched_words_in_fragments_of_the_text() => SearchCases.Highlights_mark_the_matched_words_in_fragments_of_the_text(Http, fx.Posts);

    [Fact]
    public Task Highlights_out_of_bounds_are_refused() => SearchCases.Highlights_out_of_bounds_are_refused(Http);

    [Fact]
    public Task Suggestions_are_the_closest_indexed_words_then_the_most_frequent() => SearchCases.Suggestions_are_the_closest_indexed_words_then_the_most_frequent(Http, fx.Posts);

    [Fact]
    public Task Suggestions_out_of_bounds_are_refused() => SearchCases.Suggestions_out_of_bounds_are_refused(Http);

    [Fact]
    public Task More_like_this_finds_the_posts_sharing_the_telling_words_of_one() => SearchCases.More_like_this_finds_the_posts_sharing_the_telling_words_of_one(Http, fx.Posts);

    [Fact]
    public Task More_like_this_out_of_bounds_is_refused() => SearchCases.More_like_this_out_of_bounds_is_refused(Http);

    /// <summary>A subscription matches each changed document alone: what ranks documents against each other is refused, saying so.</summary>
    [Theory]
    [InlineData("from Posts where vector.search(Embedding, $q)")]
    [InlineData("from Posts where moreLikeThis(id() = 'posts/1', '{ \"Fields\": [\"Body\"] }')")]
    [InlineData("from Posts where hybrid(search(Body, 'x'), vector.search(Embedding, $q))")]
    public async Task Subscriptions_refuse_what_ranks_documents_against_each_other(string rql)
    {
        var r = await Http.PostAsJsonAsync("subscriptions", new { name = "ranked" + Math.Abs(rql.GetHashCode()), query = rql });
        await HttpJson.AssertProblem(r, System.Net.HttpStatusCode.BadRequest, "rank documents against each other");
    }
}

/// <summary>vector.search embedded: embeddings of the sample's posts in their own collection.</summary>
public sealed class VectorSearchTests(RqlConformanceFixture fx) : IClassFixture<RqlConformanceFixture>, IAsyncLifetime
{
    private HttpClient Http => fx.Magpie.Http;

    public async Task InitializeAsync()
    {
        await VectorCases.DefineAsync(Http);
        await VectorCases.WriteAsync(Http, VectorCases.Of(fx.Posts), () => Task.CompletedTask);
    }

    public Task DisposeAsync() => Task.CompletedTask;

    [Fact]
    public Task The_nearest_vectors_are_the_true_nearest_with_filters_sorts_updates_and_deletes() =>
        VectorCases.The_nearest_vectors_are_the_true_nearest_with_filters_sorts_updates_and_deletes(Http, Http, fx.Posts, () => Task.CompletedTask);

    [Fact]
    public Task Hybrid_ranks_by_reciprocal_rank_fusion_of_both_rankings() => VectorCases.Hybrid_ranks_by_reciprocal_rank_fusion_of_both_rankings(Http, fx.Posts);

    [Fact]
    public Task Int8_vectors_find_nearly_the_same_nearest() => VectorCases.Int8_vectors_find_nearly_the_same_nearest(Http, fx.Posts);

    [Fact]
    public Task Bad_vectors_fail_their_document_and_bad_searches_are_refused() =>
        VectorCases.Bad_vectors_fail_their_document_and_bad_searches_are_refused(Http, Http, Http, () => Task.CompletedTask);
}
