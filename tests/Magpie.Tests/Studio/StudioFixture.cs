using Magpie.Tests.Fixtures;
using Microsoft.Playwright;

namespace Magpie.Tests.Studio;

/// <summary>
/// Magpie Studio in a real browser: Debian's Chromium driven by Playwright (its own browser download cannot work offline), against
/// a magpie holding the Stack Exchange sample (<see cref="Chromium"/>).
/// </summary>
public sealed class StudioFixture : IAsyncLifetime
{
    public MagpieProcess Magpie { get; private set; } = null!;
    public IPlaywright Playwright { get; private set; } = null!;
    public IBrowser Browser { get; private set; } = null!;
    public List<Queries.Conformance.SamplePost> Posts { get; } = Queries.Conformance.SamplePost.Load();

    public async Task InitializeAsync()
    {
        Magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", Magpie.BaseUrl.ToString());
        if (exit != 0) throw new InvalidOperationException(output);
        (Playwright, Browser) = await Chromium.LaunchAsync();
    }

    /// <summary>A page at 1280×800 on Studio; a failed test saves what it showed (TestResults/studio-{name}.png).</summary>
    public async Task<IPage> PageAsync(string hash = "#/overview", IBrowser? browser = null, Uri? baseUrl = null)
    {
        var context = await (browser ?? Browser).NewContextAsync(new BrowserNewContextOptions { ViewportSize = new ViewportSize { Width = 1280, Height = 800 }, AcceptDownloads = true });
        var page = await context.NewPageAsync();
        await page.GotoAsync(new Uri(baseUrl ?? Magpie.BaseUrl, "studio/" + hash).ToString());
        return page;
    }

    public static async Task ShotOnFailureAsync(IPage page, string name, Func<Task> test)
    {
        try { await test(); }
        catch
        {
            Directory.CreateDirectory(Path.Combine(AppContext.BaseDirectory, "TestResults"));
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(AppContext.BaseDirectory, "TestResults", $"studio-{name}.png"), FullPage = true });
            throw;
        }
    }

    public async Task DisposeAsync()
    {
        if (Browser is not null) await Browser.DisposeAsync();
        Playwright?.Dispose();
        await Magpie.DisposeAsync();
    }
}
