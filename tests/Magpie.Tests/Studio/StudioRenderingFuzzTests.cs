using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Studio;

/// <summary>
/// Studio's one way of putting data into the page, fuzzed in Chromium (magpie/Studio/Files/fuzz.js): random strings through the
/// h/html templates, the API path builders and the help's markdown come back as the same text, never markup. MAGPIE_FUZZ_MINUTES
/// (bench/fuzz.sh studio) runs it for that long instead of a fixed count. And no page builds markup any other way.
/// </summary>
public sealed class StudioRenderingFuzzTests
{
    private static readonly string Files = Path.Combine(RepoPaths.Root, "magpie", "Studio", "Files");

    [Fact]
    public async Task Random_strings_render_as_the_same_text_in_every_context()
    {
        var minutes = double.TryParse(Environment.GetEnvironmentVariable("MAGPIE_FUZZ_MINUTES"), out var m) ? m : 0;
        await using var magpie = await MagpieProcess.StartAsync();
        var (playwright, browser) = await Chromium.LaunchAsync();
        try
        {
            var page = await browser.NewPageAsync();
            await page.GotoAsync(new Uri(magpie.BaseUrl, "studio/").ToString());
            var seed = Environment.GetEnvironmentVariable("MAGPIE_FUZZ_SEED") is { } s ? int.Parse(s) : Random.Shared.Next(1, int.MaxValue);
            var options = minutes > 0 ? new { seed, count = int.MaxValue, ms = minutes * 60_000 } : new { seed, count = 3_000, ms = 60_000.0 };
            var result = await page.EvaluateAsync<JsonElement>("async o => (await import('/studio/fuzz.js')).fuzz(o)", options);
            var runs = result.GetProperty("runs").GetInt32();
            Console.WriteLine($"studio rendering fuzz: seed {seed}, {runs:N0} inputs");
            Assert.True(result.GetProperty("failures").GetArrayLength() == 0, $"seed {seed}: {result.GetProperty("failures")}");
            Assert.True(runs >= 1_000, $"only {runs} inputs ran");
        }
        finally
        {
            await browser.DisposeAsync();
            playwright.Dispose();
        }
    }

    [Fact]
    public void No_page_writes_markup_except_through_the_escaping_templates()
    {
        var pages = Directory.GetFiles(Files, "*.js", SearchOption.AllDirectories).Where(f => Path.GetFileName(f) is not ("studio.js" or "fuzz.js"));
        var bad = new List<string>();
        foreach (var file in pages)
        {
            var lines = File.ReadAllLines(file);
            for (var i = 0; i < lines.Length; i++)
            {
                // innerHTML only from a template's or markdown()'s output (query.js: the editor's colours and the highlight fragments' inert parse).
                if (Regex.IsMatch(lines[i], @"\.(outerHTML|insertAdjacentHTML)\b|document\.write|\beval\(|new Function\(") ||
                    Regex.IsMatch(lines[i], @"\.innerHTML\s*=") && !Regex.IsMatch(lines[i], @"innerHTML = (highlight\(|markdown\(|r\.ok \? markdown\(|String\(f\))"))
                    bad.Add($"{Path.GetRelativePath(Files, file)}:{i + 1}: {lines[i].Trim()}");
                // A template of markup is h`…` or html`…`, never h(`…`) with values spliced in by hand.
                if (Regex.IsMatch(lines[i], @"\bh\(`")) bad.Add($"{Path.GetRelativePath(Files, file)}:{i + 1}: {lines[i].Trim()}");
            }
        }
        Assert.True(bad.Count == 0, string.Join("\n", bad));
    }
}
