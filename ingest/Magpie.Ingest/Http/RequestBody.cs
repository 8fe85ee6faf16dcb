using Microsoft.AspNetCore.Http;

namespace Magpie.Ingest.Http;

/// <summary>Reads a whole request body within Kestrel's size limit, turning an oversized body into a 413 problem.</summary>
public static class RequestBody
{
    public static async Task<(byte[]? Body, IResult? Problem)> ReadAsync(HttpRequest request, CancellationToken ct)
    {
        try
        {
            using var buffer = new MemoryStream(request.ContentLength is > 0 and < int.MaxValue ? (int)request.ContentLength : 4096);
            await request.Body.CopyToAsync(buffer, ct);
            if (buffer.Length == 0) return (null, Problems.BadRequest("the request body is empty"));
            return (buffer.ToArray(), null);
        }
        catch (BadHttpRequestException e) when (e.StatusCode == StatusCodes.Status413PayloadTooLarge)
        {
            return (null, Problems.TooLarge($"the request body exceeds the limit of {request.HttpContext.Features.Get<Microsoft.AspNetCore.Http.Features.IHttpMaxRequestBodySizeFeature>()?.MaxRequestBodySize} bytes"));
        }
    }
}
