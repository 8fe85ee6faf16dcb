using Magpie.Tests.Fixtures;
using Microsoft.Playwright;

namespace Magpie.Tests.Studio;

/// <summary>
/// Magpie Studio in a real browser: Debian's Chromium driven by Playwright (its own browser download cannot work offline), against
/// a magpie holding the Stack Exchange sample. The browser: <c>CHROMIUM_PATH</c>, else <c>/usr/bin/chromium</c> (which
/// <c>.ci/run</c> installs); none is a failure saying so, never a skip.
/// </summary>
public sealed class StudioFixture : IAsyncLifetime
{
    public MagpieProcess Magpie { get; private set; } = null!;
    public IPlaywright Playwright { get; private set; } = null!;
    public IBrowser Browser { get; private set; } = null!;
    public List<Queries.Conformance.SamplePost> Posts { get; } = Queries.Conformance.SamplePost.Load();

    public static string ChromiumPath => Environment.GetEnvironmentVariable("CHROMIUM_PATH") is { Length: > 0 } path ? path : "/usr/bin/chromium";

    public async Task InitializeAsync()
    {
        Magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", Magpie.BaseUrl.ToString());
        if (exit != 0) throw new InvalidOperationException(output);
        (Playwright, Browser) = await LaunchAsync();
    }

    public static async Task<(IPlaywright, IBrowser)> LaunchAsync()
    {
        if (!File.Exists(ChromiumPath)) throw new InvalidOperationException($"no Chromium at {ChromiumPath}: apt-get install chromium (as .ci/run does), or set CHROMIUM_PATH");
        var playwright = await Microsoft.Playwright.Playwright.CreateAsync();
        // The flags a closed network needs: without them Chromium's background connections are refused, many at a time.
        var browser = await playwright.Chromium.LaunchAsync(new BrowserTypeLaunchOptions
        {
            ExecutablePath = ChromiumPath, Headless = true,
            Args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        });
        return (playwright, browser);
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
