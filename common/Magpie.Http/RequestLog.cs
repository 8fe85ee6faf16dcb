using System.Diagnostics;
using System.Globalization;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;

namespace Magpie.Http;

/// <summary>The seed's request log line: <c>Request #   1: GET -     4 ms - 200 - /docs/users/1</c>.</summary>
public static class RequestLog
{
    private static long _counter;

    public static string Format(long number, string method, long milliseconds, int status, string path) =>
        string.Create(CultureInfo.InvariantCulture, $"Request #{number,4}: {method} - {milliseconds,5} ms - {status} - {path}");

    public static IApplicationBuilder UseRequestLog(this IApplicationBuilder app)
    {
        var logger = app.ApplicationServices.GetService(typeof(ILoggerFactory)) is ILoggerFactory f
            ? f.CreateLogger("Magpie.Requests")
            : Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance;
        return app.Use(async (context, next) =>
        {
            var number = Interlocked.Increment(ref _counter);
            var started = Stopwatch.GetTimestamp();
            try { await next(context); }
            finally
            {
                if (logger.IsEnabled(LogLevel.Information))
                {
                    var ms = (long)Stopwatch.GetElapsedTime(started).TotalMilliseconds;
                    var path = context.Request.Path.Value + context.Request.QueryString.Value;
                    logger.LogInformation("{RequestLine}", Format(number, context.Request.Method, ms, context.Response.StatusCode, path));
                }
            }
        });
    }
}
