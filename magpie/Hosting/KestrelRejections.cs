using System.IO.Pipelines;
using System.Text;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Magpie.Hosting;

/// <summary>
/// Kestrel answers a request it cannot read itself, before any middleware runs: a request line or headers over its limits (414,
/// 431), a malformed request line or header (400), headers that did not arrive in time (408). Those answers have no body, where
/// every other client error Magpie gives carries an RFC 7807 problem (<see cref="ClientErrors"/>). This connection filter, under
/// TLS, recognises Kestrel's own rejection as it is written (an HTTP/1.1 4xx with <c>Content-Length: 0</c>, no content type,
/// <c>Connection: close</c>) and writes the same status with a problem body naming the limit. Every other write passes through.
/// </summary>
public static class KestrelRejections
{
    public static void UseProblemBodies(this ListenOptions listen, KestrelServerLimits limits) =>
        listen.Use(next => connection =>
        {
            connection.Transport = new Filtered(connection.Transport, new ProblemWriter(connection.Transport.Output, limits));
            return next(connection);
        });

    /// <summary>The problem Kestrel's bare answer becomes, or null when <paramref name="written"/> is not one.</summary>
    internal static byte[]? Rewrite(ReadOnlySpan<byte> written, KestrelServerLimits limits)
    {
        if (written.Length < 16 || !written.StartsWith("HTTP/1.1 4"u8) || !written.EndsWith("\r\n\r\n"u8)) return null;
        if (written.IndexOf("\r\nContent-Length: 0\r\n"u8) < 0 || written.IndexOf("\r\nConnection: close\r\n"u8) < 0 || written.IndexOf("\r\nContent-Type:"u8) >= 0) return null;
        var head = Encoding.ASCII.GetString(written);
        var statusLine = head[..head.IndexOf("\r\n", StringComparison.Ordinal)];
        if (!int.TryParse(statusLine.AsSpan(9, 3), out var status)) return null;
        var title = statusLine.Length > 13 ? statusLine[13..] : "Bad Request";
        var detail = status switch
        {
            414 => $"the request line is longer than {limits.MaxRequestLineSize:N0} bytes",
            431 => $"the request headers are larger than {limits.MaxRequestHeadersTotalSize:N0} bytes in all (or more than {limits.MaxRequestHeaderCount} headers)",
            408 => $"the request headers did not arrive within {limits.RequestHeadersTimeout.TotalSeconds:0} s",
            400 => "the request line or a header is not valid HTTP/1.1 (Kestrel could not read the request)",
            _ => $"Kestrel refused the request ({status})",
        };
        var body = Encoding.UTF8.GetBytes(System.Text.Json.JsonSerializer.Serialize(new
        {
            type = status switch
            {
                400 => "https://tools.ietf.org/html/rfc9110#section-15.5.1",
                408 => "https://tools.ietf.org/html/rfc9110#section-15.5.9",
                414 => "https://tools.ietf.org/html/rfc9110#section-15.5.15",
                431 => "https://tools.ietf.org/html/rfc6585#section-5",
                _ => "https://tools.ietf.org/html/rfc9110#section-15.5",
            },
            title,
            status,
            detail,
        }));
        var rest = head[(statusLine.Length + 2)..].Replace("Content-Length: 0\r\n", $"Content-Type: application/problem+json\r\nContent-Length: {body.Length}\r\n", StringComparison.Ordinal);
        return [.. Encoding.ASCII.GetBytes(statusLine + "\r\n" + rest), .. body];
    }

    private sealed class Filtered(IDuplexPipe inner, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input => inner.Input;
        public PipeWriter Output => output;
    }

    private sealed class ProblemWriter(PipeWriter inner, KestrelServerLimits limits) : PipeWriter
    {
        private Memory<byte> _handed;

        public override Memory<byte> GetMemory(int sizeHint = 0) => _handed = inner.GetMemory(sizeHint);

        public override Span<byte> GetSpan(int sizeHint = 0) => (_handed = inner.GetMemory(sizeHint)).Span;

        public override void Advance(int bytes)
        {
            // A response Kestrel wrote itself is written in one piece: only such a piece can start with the status line.
            if (bytes >= 16 && _handed.Length >= bytes && _handed.Span.StartsWith("HTTP/1.1 4"u8) && Rewrite(_handed.Span[..bytes], limits) is { } problem)
            {
                // The bare answer is left unadvanced (memory a writer hands out is only written once advanced); the problem goes instead.
                problem.CopyTo(inner.GetSpan(problem.Length));
                inner.Advance(problem.Length);
                return;
            }
            inner.Advance(bytes);
        }

        public override ValueTask<FlushResult> FlushAsync(CancellationToken cancellationToken = default) => inner.FlushAsync(cancellationToken);
        public override void CancelPendingFlush() => inner.CancelPendingFlush();
        public override void Complete(Exception? exception = null) => inner.Complete(exception);
        public override ValueTask CompleteAsync(Exception? exception = null) => inner.CompleteAsync(exception);
        public override bool CanGetUnflushedBytes => inner.CanGetUnflushedBytes;
        public override long UnflushedBytes => inner.UnflushedBytes;
    }
}
