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
}
