using Magpie.Indexer.Indexing;

namespace Magpie.Tests.Indexing;

/// <summary>
/// An index's error count is the number of ids failing now, however many there are and however often each fails: past the
/// 10,000 kept with their messages too, across a restart, and down to zero when they all pass — the index is then not errored.
/// </summary>
public sealed class IndexStatusTests
{
    [Fact]
    public void Ids_past_the_kept_ones_are_counted_once_and_uncounted_when_they_pass_and_a_restart_keeps_the_count_and_the_ratio()
    {
        var status = new IndexStatus("Posts/Failing");
        var ids = Enumerable.Range(0, 12_000).Select(i => $"posts/{i}").ToList();
        status.Attempted(ids.Count);
        foreach (var id in ids) status.Error(id, "boom");
        foreach (var id in ids) status.Error(id, "boom again");   // each failing twice is still one failing document
        Assert.Equal(12_000, status.Snapshot().ErrorCount);
        Assert.NotNull(status.Errored);
        var set = status.Failures();
        Assert.Equal(IndexStatus.KeptFailures, set.Failures.Count);
        Assert.Equal(12_000, set.Ids.Distinct().Count());

        // A restart: the process reads back what was kept beside the index, and has tried nothing yet itself.
        var restarted = new IndexStatus("Posts/Failing");
        restarted.Restore(set.Failures, set.Unkept, set.Attempts);
        Assert.Equal(12_000, restarted.Snapshot().ErrorCount);
        Assert.Equal(status.Errored, restarted.Errored);

        // The cause fixed: every document indexes (the retry maps each again) and leaves the count.
        restarted.Attempted(ids.Count);
        foreach (var id in ids) restarted.Cleared(id);
        Assert.Equal(0, restarted.Snapshot().ErrorCount);
        Assert.Null(restarted.Errored);
        Assert.Empty(restarted.Failures().Ids);
    }

    [Fact]
    public void A_few_failures_among_many_documents_do_not_mark_the_index_errored_after_a_restart()
    {
        // The probe's: 2,000 failures kept, 567 documents tried since the restart: "errored: 2,000 of 567".
        var status = new IndexStatus("Posts/Some");
        status.Attempted(100_000);
        foreach (var i in Enumerable.Range(0, 2_000)) status.Error($"posts/{i}", "boom");
        var set = status.Failures();
        var restarted = new IndexStatus("Posts/Some");
        restarted.Restore(set.Failures, set.Unkept, set.Attempts);
        restarted.Attempted(567);
        Assert.Null(restarted.Errored);
    }
}
