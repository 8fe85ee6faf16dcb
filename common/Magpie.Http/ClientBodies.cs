namespace Magpie.Http;

/// <summary>Request bodies that are the client's fault although Kestrel does not say so.</summary>
public static class ClientBodies
{
    /// <summary>
    /// A chunk size too large for Kestrel's arithmetic (<c>FFFFFFFFFFFFFFFFFF</c>): Kestrel throws an <see cref="IOException"/> over an
    /// <see cref="OverflowException"/> instead of the <c>BadHttpRequestException</c> it throws for other broken chunks. The client's fault: 400.
    /// </summary>
    public static bool IsBrokenChunk(Exception e) => e is IOException { InnerException: OverflowException };
}
