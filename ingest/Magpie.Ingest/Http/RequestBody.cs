using Magpie.Http;
using System.Buffers;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;

namespace Magpie.Ingest.Http;

/// <summary>
/// A whole request body in a buffer rented from the shared pool. Bulk bodies are ~128 KB: allocating
/// them fresh would put every request on the large-object heap (gen-2 collections under load).
/// </summary>
public sealed class RequestBody : IDisposable
{
    private byte[] _buffer;

    private RequestBody(byte[] buffer, int length)
    {
        _buffer = buffer;
        Length = length;
    }

    public int Length { get; }
    public ReadOnlyMemory<byte> Memory => _buffer.AsMemory(0, Length);
    public ReadOnlySpan<byte> Span => _buffer.AsSpan(0, Length);

    public void Dispose()
    {
        var buffer = Interlocked.Exchange(ref _buffer, []);
        if (buffer.Length > 0) ArrayPool<byte>.Shared.Return(buffer);
    }

    /// <summary>Reads the body within Kestrel's size limit; an oversized or empty body becomes a problem response.</summary>
    public static async Task<(RequestBody? Body, IResult? Problem)> ReadAsync(HttpRequest request, CancellationToken ct)
    {
        var buffer = ArrayPool<byte>.Shared.Rent(request.ContentLength is > 0 and < int.MaxValue ? (int)request.ContentLength + 1 : 16 * 1024);
        var length = 0;
        try
        {
            while (true)
            {
                if (length == buffer.Length)
                {
                    var larger = ArrayPool<byte>.Shared.Rent(buffer.Length * 2);
                    buffer.AsSpan(0, length).CopyTo(larger);
                    ArrayPool<byte>.Shared.Return(buffer);
                    buffer = larger;
                }
                var read = await request.Body.ReadAsync(buffer.AsMemory(length), ct);
                if (read == 0) break;
                length += read;
            }
        }
        catch (BadHttpRequestException e) when (e.StatusCode == StatusCodes.Status413PayloadTooLarge)
        {
            ArrayPool<byte>.Shared.Return(buffer);
            var limit = request.HttpContext.Features.Get<IHttpMaxRequestBodySizeFeature>()?.MaxRequestBodySize;
            return (null, Problems.TooLarge($"the request body exceeds the limit of {limit} bytes"));
        }
        catch (BadHttpRequestException e)
        {
            // A body that stops short of its Content-Length (408 once it arrives too slowly), a broken chunk (400): the client's fault.
            ArrayPool<byte>.Shared.Return(buffer);
            return (null, Problems.Create(e.StatusCode, e.StatusCode == StatusCodes.Status408RequestTimeout ? "Request timeout" : "Bad request", e.Message));
        }
        catch (IOException e) when (ClientBodies.IsBrokenChunk(e))
        {
            ArrayPool<byte>.Shared.Return(buffer);
            return (null, Problems.BadRequest($"the chunked request body is malformed: {e.Message}"));
        }
        catch
        {
            ArrayPool<byte>.Shared.Return(buffer);
            throw;
        }
        if (length == 0)
        {
            ArrayPool<byte>.Shared.Return(buffer);
            return (null, Problems.BadRequest("the request body is empty"));
        }
        return (new RequestBody(buffer, length), null);
    }
}
