namespace Magpie.Contracts.Indexes;

/// <summary>Read-your-writes: waits until every index has processed a given etag.</summary>
public interface IIndexWaiter
{
    /// <summary>True when every index got there within <paramref name="timeout"/> (or there are no indexes).</summary>
    Task<bool> WaitForEtagAsync(long etag, TimeSpan timeout, CancellationToken ct = default);
}
