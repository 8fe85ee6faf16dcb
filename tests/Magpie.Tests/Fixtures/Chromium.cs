using Microsoft.Playwright;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// Debian's Chromium driven by Playwright (its own browser download cannot work offline): <c>CHROMIUM_PATH</c>, else
/// <c>/usr/bin/chromium</c>, which <c>.ci/run</c> installs. None is a failure saying so, never a skip.
/// </summary>
public static class Chromium
{
    public static string Path => Environment.GetEnvironmentVariable("CHROMIUM_PATH") is { Length: > 0 } path ? path : "/usr/bin/chromium";

    public static async Task<(IPlaywright Playwright, IBrowser Browser)> LaunchAsync()
    {
        if (!File.Exists(Path)) throw new InvalidOperationException($"no Chromium at {Path}: apt-get install chromium (as .ci/run does), or set CHROMIUM_PATH");
        var playwright = await Microsoft.Playwright.Playwright.CreateAsync();
        // The flags a closed network needs: without them Chromium's background connections are refused, many at a time.
        var browser = await playwright.Chromium.LaunchAsync(new BrowserTypeLaunchOptions
        {
            ExecutablePath = Path, Headless = true,
            Args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        });
        return (playwright, browser);
    }
}
