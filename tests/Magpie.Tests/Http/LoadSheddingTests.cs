using System.Net;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Http;

/// <summary>Past its concurrency limit and queue the server sheds load with 503 + Retry-After instead of queueing without bound.</summary>
public sealed class LoadSheddingTests
{
    [Fact]
    public async Task Requests_beyond_the_limit_get_503_with_retry_after_and_the_rest_succeed()
    {
        await using var magpie = await MagpieProcess.StartAsync(environment: new()
        {
            ["MAGPIE__MAXCONCURRENTREQUESTS"] = "1",
            ["MAGPIE__REQUESTQUEUELIMIT"] = "0",
        });
        var pad = new string('x', 900);
        var docs = Enumerable.Range(0, 128).Select(i => ($"shed/{i}", $$"""{"pad":"{{pad}}"}""")).ToList();
        var responses = await Task.WhenAll(Enumerable.Range(0, 40).Select(_ => Task.Run(() => magpie.Http.BulkPutAsync(docs))));

        var shed = responses.Where(r => r.StatusCode == HttpStatusCode.ServiceUnavailable).ToList();
        Assert.NotEmpty(shed);
        Assert.Contains(responses, r => r.StatusCode == HttpStatusCode.OK);
        Assert.All(responses, r => Assert.True(r.StatusCode is HttpStatusCode.OK or HttpStatusCode.ServiceUnavailable, $"unexpected {(int)r.StatusCode}"));
        Assert.NotNull(shed[0].Headers.RetryAfter);
        Assert.Equal("application/problem+json", shed[0].Content.Headers.ContentType?.MediaType);
    }

    [Fact]
    public async Task Trickled_uploads_hold_only_upload_slots_and_lose_them_to_the_minimum_data_rate()
    {
        await using var magpie = await MagpieProcess.StartAsync(environment: new()
        {
            ["MAGPIE__MAXCONCURRENTREQUESTS"] = "8",
            ["MAGPIE__REQUESTQUEUELIMIT"] = "8",
        });
        // The probe's slowloris, scaled to these limits: uploads declaring 16 MB, 150 bytes every half second.
        using var stop = new CancellationTokenSource();
        var answers = new System.Collections.Concurrent.ConcurrentBag<string>();
        var uploads = Enumerable.Range(0, 40).Select(i => Task.Run(async () =>
        {
            using var tcp = new System.Net.Sockets.TcpClient();
            await tcp.ConnectAsync("127.0.0.1", magpie.Port);
            var stream = tcp.GetStream();
            await stream.WriteAsync(System.Text.Encoding.ASCII.GetBytes(
                $"PUT /docs/slow/{i} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {16 * 1024 * 1024}\r\n\r\n{{\"a\":\""));
            var reading = new StreamReader(stream).ReadLineAsync();
            try
            {
                while (!stop.IsCancellationRequested && !reading.IsCompleted)
                {
                    await stream.WriteAsync(new byte[150].Select(_ => (byte)'x').ToArray());
                    await Task.Delay(500);
                }
            }
            catch (IOException) { }
            if (await Task.WhenAny(reading, Task.Delay(TimeSpan.FromSeconds(5))) == reading && reading.Result is { } status) answers.Add(status);
        })).ToList();
        await Task.Delay(1500);
        // Meanwhile reads and small writes are served: none is shed.
        for (var i = 0; i < 20; i++)
        {
            Assert.Equal(HttpStatusCode.OK, (await magpie.Http.GetAsync("stats")).StatusCode);
            Assert.Equal(HttpStatusCode.Created, (await magpie.Http.PutAsync($"fast/{i}", "{}")).StatusCode);
        }
        // After the 5 s grace the minimum data rate (4 KB/s) cuts the trickles: each answered 408 or shed with 503, none still held.
        await Task.Delay(TimeSpan.FromSeconds(8));
        stop.Cancel();
        await Task.WhenAll(uploads);
        Assert.Contains(answers, a => a.StartsWith("HTTP/1.1 408", StringComparison.Ordinal));
        Assert.All(answers, a => Assert.Matches("^HTTP/1.1 (408|503)", a));
    }
}
