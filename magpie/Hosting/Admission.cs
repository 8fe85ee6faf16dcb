using Microsoft.AspNetCore.Http;

namespace Magpie.Hosting;

/// <summary>Which admission pool a request waits in (<see cref="MagpieHost"/>'s concurrency limiter).</summary>
public static class Admission
{
    /// <summary>Bodies up to this size (a document, a query, a patch) share the pool of reads; a bulk batch is ~128 KB.</summary>
    public const long SmallBody = 64 * 1024;

    /// <summary>A body declared over <see cref="SmallBody"/>, or chunked (its size unknown until it ends).</summary>
    public static bool IsLargeUpload(HttpRequest request) =>
        request.ContentLength is > SmallBody || (request.ContentLength is null && request.Headers.TransferEncoding.Count > 0);
}
