using System.Net.Http.Json;
using System.Text.Json;
using Microsoft.Playwright;

namespace Magpie.Bench;

/// <summary>
/// Studio's figures, in Chromium: Studio's overview with 20 indexes and 5 ETL tasks — the server time of the API calls of its
/// first load and of each refresh (the browser's resource timings: request sent to response received) — and a query page of 25
/// results: milliseconds from the API's answer to the table drawn (the page records it, <c>#output[data-rendered]</c>).
/// </summary>
public static class StudioBenchmark
{
    public static async Task DefineAsync(HttpClient http, string rabbitUrl)
    {
        for (var i = 0; i < 20; i++)
            (await http.PutAsJsonAsync($"indexes/Studio/Bench{i}", new { maps = new[] { $"map('Posts', p => ({{ Score{i}: p.Score, Title: p.Title }}))" } })).EnsureSuccessStatusCode();
        (await http.PutAsJsonAsync("etl/connections/rabbit", new { type = "rabbitmq", url = rabbitUrl })).EnsureSuccessStatusCode();
        for (var i = 0; i < 5; i++)
            (await http.PutAsJsonAsync($"etl/tasks/bench{i}", new
            {
                connection = "rabbit", queues = new[] { new { name = $"studio-bench-{i}", exchange = $"Bench{i}" } },
                transforms = new[] { new { collections = new[] { "Posts" }, script = $"loadToBench{i}({{ Title: this.Title }});" } },
            })).EnsureSuccessStatusCode();
    }

    /// <summary>The server time of the API calls of the page's first load, then of each of <paramref name="refreshes"/> refreshes (ms).</summary>
    /// <remarks>The first load is measured twice, each in a new browser context: the first one also pays for the server's first
    /// calls of these endpoints (JIT), which a server that has run a while has behind it.</remarks>
    public static async Task<(double Cold, double First, List<double> Refreshes)> OverviewAsync(IBrowser browser, Uri magpie, int refreshes)
    {
        async Task<(IPage, double)> LoadAsync()
        {
            var page = await (await browser.NewContextAsync(new BrowserNewContextOptions { ViewportSize = new ViewportSize { Width = 1280, Height = 800 } })).NewPageAsync();
            await page.GotoAsync(new Uri(magpie, "studio/#/overview").ToString());
            await page.Locator("#indexes tbody tr").Nth(19).WaitForAsync();
            return (page, await ServerTimeAsync(page));
        }
        var (_, cold) = await LoadAsync();
        var (page, first) = await LoadAsync();
        var each = new List<double>();
        for (var i = 0; i < refreshes; i++)
        {
            await page.EvaluateAsync("performance.clearResourceTimings()");
            await page.WaitForTimeoutAsync(2100);   // one refresh every 2 s
            each.Add(await ServerTimeAsync(page));
        }
        return (cold, first, each);
    }

    /// <summary>The longest API call's server time among the page's resource timings (the calls of one refresh run side by side).</summary>
    private static async Task<double> ServerTimeAsync(IPage page) => await page.EvaluateAsync<double>(
        "Math.max(0, ...performance.getEntriesByType('resource').filter(e => !e.name.includes('/studio/')).map(e => e.responseStart - e.requestStart))");

    /// <summary>Milliseconds from the API's answer to a page of 25 results drawn, for <paramref name="times"/> runs of the query.</summary>
    public static async Task<List<double>> QueryRenderAsync(IBrowser browser, Uri magpie, int times)
    {
        var page = await (await browser.NewContextAsync(new BrowserNewContextOptions { ViewportSize = new ViewportSize { Width = 1280, Height = 800 } })).NewPageAsync();
        await page.GotoAsync(new Uri(magpie, "studio/#/query").ToString());
        await page.Locator("#output").WaitForAsync();
        var rendered = new List<double>();
        for (var i = 0; i < times; i++)
        {
            await page.EvaluateAsync("document.querySelector('#output').removeAttribute('data-rendered')");
            await page.FillAsync("#rql", $"from index 'Studio/Bench{i % 20}' where Score{i % 20} >= 0 order by Score{i % 20} desc");
            await page.PressAsync("#rql", "Control+Enter");
            await page.Locator("#output[data-rendered]").WaitForAsync();
            rendered.Add(double.Parse(await page.Locator("#output").GetAttributeAsync("data-rendered") ?? "0", System.Globalization.CultureInfo.InvariantCulture));
        }
        return rendered;
    }
}
