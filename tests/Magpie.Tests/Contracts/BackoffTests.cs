using Magpie.Contracts;

namespace Magpie.Tests.Contracts;

/// <summary>The one retry delay every retrying loop uses: doubles to its cap, starts again after progress.</summary>
[Trait("Category", "Fast")]
public sealed class BackoffTests
{
    [Fact]
    public void The_delay_doubles_to_its_cap_and_starts_again_after_a_reset()
    {
        var backoff = new Backoff(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(5));
        Assert.Equal([1, 2, 4, 5, 5], Enumerable.Range(0, 5).Select(_ => backoff.Next().TotalSeconds).ToList());
        backoff.Reset();
        Assert.Equal(1, backoff.Next().TotalSeconds);
        // A cap below the start is the delay throughout.
        var capped = new Backoff(TimeSpan.FromSeconds(10), TimeSpan.FromSeconds(3));
        Assert.Equal([3, 3], new[] { capped.Next().TotalSeconds, capped.Next().TotalSeconds });
    }
}
