using Magpie.Tests.Fixtures;
using Magpie.Tests.Queries;

namespace Magpie.Tests.Indexing;

/// <summary>
/// <c>load()</c> in maps, embedded, on the Stack Exchange sample: posts indexed with their owner's DisplayName follow the owner —
/// renamed, deleted, created late — across a restart.
/// </summary>
public sealed class LoadDocumentTests(ImportedSampleFixture fx) : IClassFixture<ImportedSampleFixture>
{
    private HttpClient Http => fx.Magpie.Http;

    private const string Index = "Posts/WithOwner";

    [Fact]
    public Task Posts_answer_with_their_owners_current_name_renamed_deleted_or_created_late() =>
        LoadDocumentCases.Posts_follow_their_owner(Http, Http, Http, Index, async () => { await fx.Magpie.StopAsync(); await fx.Magpie.StartAsync(); }, () => Task.CompletedTask);

    [Fact]
    public Task A_map_reduce_index_counts_posts_per_owner_name_and_follows_a_rename() =>
        LoadDocumentCases.Owner_counts_follow_a_rename(Http, Http, Http, "Posts/PerOwnerName", () => Task.CompletedTask);
}
