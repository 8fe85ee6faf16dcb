using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Microsoft.Playwright;

namespace Magpie.Tests.Studio;

/// <summary>
/// What a user does in Studio, in Chromium: define an index (a script error shown at its line, then fixed), query it and page
/// by cursor; edit a document into a conflict (nothing overwritten); watch an ETL task's lag fall to 0. The overview and query
/// screenshots the README shows are taken here.
/// </summary>
public sealed class StudioTests(StudioFixture fx) : IClassFixture<StudioFixture>
{
    private static readonly string Images = Path.Combine(RepoPaths.Root, "docs", "images");

    [Fact]
    public async Task An_index_is_defined_with_an_error_fixed_and_queried_page_by_page()
    {
        var page = await fx.PageAsync("#/indexes");
        await StudioFixture.ShotOnFailureAsync(page, "index-and-query", async () =>
        {
            await page.ClickAsync("#create");
            await page.FillAsync("#name", "Studio/PostsByScore");
            var map = page.Locator("#maps textarea").First;
            await map.FillAsync("map('Posts', p => {\n  return { Title: p.Title, Score: p.Score, };;\n  ]\n})");
            await page.ClickAsync("#save");
            // The script error at its line, in the map it is in.
            await Assertions.Expect(page.Locator("#message")).ToContainTextAsync("maps[0]");
            await Assertions.Expect(page.Locator("#maps .where").First).ToContainTextAsync("line 3");
            await map.FillAsync("map('Posts', p => ({ Title: p.Title || null, Score: p.Score }))");
            await page.ClickAsync("#save");
            await Assertions.Expect(page.Locator("#message")).ToContainTextAsync("Saved Studio/PostsByScore");

            await page.GotoAsync(new Uri(fx.Magpie.BaseUrl, "studio/#/query").ToString());
            await page.FillAsync("#rql", "from index 'Studio/PostsByScore' where Score > 2 order by Score desc, id()");
            await page.PressAsync("#rql", "Control+Enter");
            var rows = page.Locator("table.results tbody tr");
            await Assertions.Expect(rows).ToHaveCountAsync(25);
            var expected = fx.Posts.Where(p => p.Score > 2).OrderByDescending(p => p.Score).ThenBy(p => p.Id, StringComparer.Ordinal).Select(p => p.Id).ToList();
            await Assertions.Expect(page.Locator("#summary")).ToContainTextAsync($"{expected.Count:N0} results");
            Directory.CreateDirectory(Images);
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(Images, "studio-query.png") });
            await page.ClickAsync("#next");
            await Assertions.Expect(rows).ToHaveCountAsync(50);
            var ids = await page.Locator("table.results tbody tr td:first-child").AllInnerTextsAsync();
            Assert.Equal(expected.Take(50), ids);

            // An RQL error at its place.
            await page.FillAsync("#rql", "from index 'Studio/PostsByScore' where Score >");
            await page.PressAsync("#rql", "Control+Enter");
            await Assertions.Expect(page.Locator("#where")).ToContainTextAsync("column");
        });
    }

    [Fact]
    public async Task A_semantic_hybrid_query_shows_its_ranking_scores()
    {
        var page = await fx.PageAsync("#/query");
        await StudioFixture.ShotOnFailureAsync(page, "semantic-query", async () =>
        {
            await page.FillAsync("#rql", "from Posts where hybrid(search(Title, $q), vector.search(embedding.text(Title), $q, 0.2))");
            await page.FillAsync("#parameters", """{ "q": "one person operating several user profiles" }""");
            await page.PressAsync("#rql", "Control+Enter");
            await Assertions.Expect(page.Locator("table.results thead th").Nth(1)).ToHaveTextAsync("score", new() { Timeout = 120_000 });
            // posts/3312 ("Handling a user with multiple accounts?") is among them; the fused scores come best first.
            var ids = await page.Locator("table.results tbody tr td:first-child").AllInnerTextsAsync();
            Assert.Contains("posts/3312", ids);
            var scores = (await page.Locator("table.results tbody tr td.score").AllInnerTextsAsync())
                .Select(s => float.Parse(s, System.Globalization.CultureInfo.InvariantCulture)).ToList();
            Assert.Equal(ids.Count, scores.Count);
            Assert.True(scores[0] > 0 && scores.SequenceEqual(scores.OrderDescending()), string.Join(", ", scores));
        });
    }

    [Fact]
    public async Task A_document_changed_meanwhile_is_a_conflict_and_is_not_overwritten()
    {
        Assert.True((await fx.Magpie.Http.PutAsync("notes/conflict", """{"Text": "first", "Score": 1}""")).IsSuccessStatusCode);
        var page = await fx.PageAsync("#/documents/notes/notes/conflict");
        await StudioFixture.ShotOnFailureAsync(page, "conflict", async () =>
        {
            var editor = page.Locator("#docJson");
            await Assertions.Expect(editor).ToBeVisibleAsync();
            var opened = JsonDocument.Parse(await editor.InputValueAsync()).RootElement;
            // Someone else changes the document after it was opened here.
            Assert.True((await fx.Magpie.Http.PatchAsync("notes/conflict", """[{"op":"replace","path":"/Score","value":12345}]""")).IsSuccessStatusCode);
            await editor.FillAsync((await editor.InputValueAsync()).Replace("\"Score\": " + opened.GetProperty("Score").GetRawText(), "\"Score\": -1"));
            await page.ClickAsync("#save");
            await Assertions.Expect(page.Locator("#docMessage")).ToContainTextAsync("Conflict");
            var now = await fx.Magpie.Http.GetFromJsonAsync<JsonElement>("docs/notes/conflict");
            Assert.Equal(12345, now.GetProperty("Score").GetInt32());
            // Reopened, it shows the current version, and saves.
            await page.ReloadAsync();
            await Assertions.Expect(page.Locator("#docJson")).ToHaveValueAsync(new System.Text.RegularExpressions.Regex("\"Score\": 12345"));
            await page.ClickAsync("#save");
            await Assertions.Expect(page.Locator("#docMessage")).ToContainTextAsync("Saved");
            // Its versions the change log holds: the first one, opened in the editor.
            await page.ClickAsync("#revisions");
            var first = page.Locator("#versions tbody tr").Filter(new() { HasText = "\"Score\":1," });
            await Assertions.Expect(first).ToHaveCountAsync(1);
            await first.ClickAsync();
            await Assertions.Expect(page.Locator("#docJson")).ToHaveValueAsync(new System.Text.RegularExpressions.Regex("\"Score\": 1\\b"));
        });
    }

    [Fact]
    public async Task The_overview_shows_the_indexes_and_help_opens_the_docs()
    {
        await fx.Magpie.Http.PutIndexAsync("Studio/Titles", """{ "maps": ["map('Posts', p => ({ Title: p.Title || null }))"], "fields": { "Title": { "indexing": "search" } } }""");
        await fx.Magpie.Http.QueryNonStaleAsync("from index 'Studio/Titles'");
        var page = await fx.PageAsync("#/overview");
        await StudioFixture.ShotOnFailureAsync(page, "overview", async () =>
        {
            await Assertions.Expect(page.Locator("#indexes tbody")).ToContainTextAsync("Studio/Titles");
            await Assertions.Expect(page.Locator("#docs")).Not.ToHaveTextAsync("–");
            Directory.CreateDirectory(Images);
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(Images, "studio-overview.png") });
            // Help beside the query editor is the query-language reference, served offline by magpie.
            await page.GotoAsync(new Uri(fx.Magpie.BaseUrl, "studio/#/query").ToString());
            await page.ClickAsync("#help");
            await Assertions.Expect(page.Locator("#helpTitle")).ToHaveTextAsync("QUERIES.md");
            await Assertions.Expect(page.Locator("#helpBody h1")).ToContainTextAsync("Queries");
        });
    }
}

/// <summary>With API keys: the page asks for one, and a read-only key sees nothing it may not do.</summary>
public sealed class StudioKeyTests
{
    [Fact]
    public async Task A_read_only_key_sees_no_edit_buttons()
    {
        var dataDir = Directory.CreateTempSubdirectory("magpie-studio-keys-").FullName;
        var admin = await TestKeys.CreateAsync(dataDir, "admin", "ops");
        var reader = await TestKeys.CreateAsync(dataDir, "read", "viewer");
        await using var magpie = await MagpieProcess.StartAsync(dataDir: dataDir);
        using var adminHttp = new HttpClient { BaseAddress = magpie.BaseUrl };
        adminHttp.DefaultRequestHeaders.Authorization = new("Bearer", admin);
        Assert.True((await adminHttp.PutAsync("docs/notes/1", HttpJson.Json("""{"Text":"hello"}"""))).IsSuccessStatusCode);
        var (playwright, browser) = await Chromium.LaunchAsync();
        try
        {
            var context = await browser.NewContextAsync(new BrowserNewContextOptions { ViewportSize = new ViewportSize { Width = 1280, Height = 800 } });
            var page = await context.NewPageAsync();
            await page.GotoAsync(new Uri(magpie.BaseUrl, "studio/#/documents/notes/notes/1").ToString());
            await StudioFixture.ShotOnFailureAsync(page, "read-only", async () =>
            {
                // Asked for a key once; a wrong one is refused.
                await Assertions.Expect(page.Locator("#login")).ToBeVisibleAsync();
                await page.FillAsync("#loginKey", "mgp_not_a_key");
                await page.ClickAsync("#loginForm button");
                await Assertions.Expect(page.Locator("#loginError")).ToContainTextAsync("does not know this key");
                await page.FillAsync("#loginKey", reader);
                await page.ClickAsync("#loginForm button");
                await Assertions.Expect(page.Locator("#docJson")).ToHaveValueAsync(new System.Text.RegularExpressions.Regex("hello"));
                await Assertions.Expect(page.Locator("#who")).ToContainTextAsync("viewer (read)");
                foreach (var button in new[] { "#save", "#delete", "#new" }) await Assertions.Expect(page.Locator(button)).ToBeHiddenAsync();
                await Assertions.Expect(page.Locator("#nav a[data-page=keys]")).ToBeHiddenAsync();
                await page.GotoAsync(new Uri(magpie.BaseUrl, "studio/#/indexes").ToString());
                await Assertions.Expect(page.Locator("#create")).ToBeHiddenAsync();
            });
        }
        finally
        {
            await browser.DisposeAsync();
            playwright.Dispose();
        }
    }
}

/// <summary>An ETL task to a real RabbitMQ: its lag, shown in Studio, falls to 0 once its documents are published. A queue sink
/// reading what a task published: Studio shows what it applied and dead-lettered, and disables and enables it.</summary>
public sealed class StudioEtlTests(RabbitMqFixture rabbit) : IClassFixture<RabbitMqFixture>
{
    [Fact]
    public async Task An_etl_tasks_lag_falls_to_zero()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        foreach (var chunk in Enumerable.Range(1, 300).Chunk(100))
        {
            var body = System.Text.Json.JsonSerializer.Serialize(chunk.Select(i => new { method = "PUT", id = $"notes/{i}", document = new { Text = $"note {i}" } }));
            Assert.True((await magpie.Http.PostAsync("bulk_docs", new StringContent(body, System.Text.Encoding.UTF8, "application/json"))).IsSuccessStatusCode);
        }
        var (playwright, browser) = await Chromium.LaunchAsync();
        try
        {
            var page = await (await browser.NewContextAsync(new BrowserNewContextOptions { ViewportSize = new ViewportSize { Width = 1280, Height = 800 } })).NewPageAsync();
            await page.GotoAsync(new Uri(magpie.BaseUrl, "studio/#/etl").ToString());
            await StudioFixture.ShotOnFailureAsync(page, "etl", async () =>
            {
                Assert.True((await magpie.Http.PutAsJsonAsync("etl/connections/rabbit", new { type = "rabbitmq", url = rabbit.Broker.Url })).IsSuccessStatusCode);
                Assert.True((await magpie.Http.PutAsJsonAsync("etl/tasks/notes", new
                {
                    connection = "rabbit", queues = new[] { new { name = "studio-notes", exchange = "Notes" } },
                    transforms = new[] { new { collections = new[] { "notes" }, script = "loadToNotes({ Text: this.Text });" } },
                })).IsSuccessStatusCode);
                var row = page.Locator("#tasks tr[data-task=notes]");
                await Assertions.Expect(row).ToBeVisibleAsync(new() { Timeout = 30_000 });
                await Assertions.Expect(row.Locator("td.lag")).ToHaveTextAsync("0", new() { Timeout = 60_000 });
                await Assertions.Expect(row).ToContainTextAsync("300");
            });
        }
        finally
        {
            await browser.DisposeAsync();
            playwright.Dispose();
        }
    }

    [Fact]
    public async Task A_sinks_applied_and_dead_lettered_messages_show_and_it_can_be_disabled_and_enabled()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var body = System.Text.Json.JsonSerializer.Serialize(Enumerable.Range(1, 100).Select(i => new { method = "PUT", id = $"notes/{i}", document = new { Text = $"note {i}" } }));
        Assert.True((await magpie.Http.PostAsync("bulk_docs", new StringContent(body, System.Text.Encoding.UTF8, "application/json"))).IsSuccessStatusCode);
        var (playwright, browser) = await Chromium.LaunchAsync();
        try
        {
            var page = await (await browser.NewContextAsync(new BrowserNewContextOptions { ViewportSize = new ViewportSize { Width = 1280, Height = 800 } })).NewPageAsync();
            await page.GotoAsync(new Uri(magpie.BaseUrl, "studio/#/etl").ToString());
            await StudioFixture.ShotOnFailureAsync(page, "sinks", async () =>
            {
                Assert.True((await magpie.Http.PutAsJsonAsync("etl/connections/rabbit", new { type = "rabbitmq", url = rabbit.Broker.Url })).IsSuccessStatusCode);
                Assert.True((await magpie.Http.PutAsJsonAsync("sinks/copies", new
                {
                    connection = "rabbit", queues = new[] { "studio-copies" },
                    script = "if (this.Text === 'note 13') throw new Error('unlucky note'); put('copies/', { Text: this.Text });",
                })).IsSuccessStatusCode);
                Assert.True((await magpie.Http.PutAsJsonAsync("etl/tasks/copy-out", new
                {
                    connection = "rabbit", queues = new[] { new { name = "studio-copies", exchange = "Copies" } },
                    transforms = new[] { new { collections = new[] { "notes" }, script = "loadToCopies({ Text: this.Text });" } },
                })).IsSuccessStatusCode);
                var row = page.Locator("#sinks tr[data-sink=copies]");
                await Assertions.Expect(row).ToBeVisibleAsync(new() { Timeout = 30_000 });
                await Assertions.Expect(row).ToContainTextAsync("rabbit: studio-copies");
                await Assertions.Expect(row.Locator("td.applied")).ToHaveTextAsync("99", new() { Timeout = 60_000 });
                await Assertions.Expect(row.Locator("td.dead")).ToHaveTextAsync("1");
                await Assertions.Expect(row.Locator("td.received")).ToHaveTextAsync("100");
                await Assertions.Expect(row.Locator("td.lag")).ToHaveTextAsync("0");
                await Assertions.Expect(row.Locator("td.error")).ToContainTextAsync("unlucky note");

                await row.Locator("button.toggle").ClickAsync();
                await Assertions.Expect(row.Locator(".badge")).ToHaveTextAsync("disabled", new() { Timeout = 30_000 });
                Assert.True((await magpie.Http.GetFromJsonAsync<System.Text.Json.JsonElement>("sinks/copies")).GetProperty("disabled").GetBoolean());
                await Assertions.Expect(row.Locator("button.toggle")).ToHaveTextAsync("Enable");
                await row.Locator("button.toggle").ClickAsync();
                await Assertions.Expect(row.Locator(".badge")).ToHaveTextAsync("running", new() { Timeout = 30_000 });
            });
            var copies = await magpie.Http.PostAsJsonAsync("queries", new { query = "from copies", pageSize = 1, waitForNonStaleResults = true });
            Assert.Equal(99, (await copies.Content.ReadFromJsonAsync<System.Text.Json.JsonElement>()).GetProperty("totalResults").GetInt32());
        }
        finally
        {
            await browser.DisposeAsync();
            playwright.Dispose();
        }
    }
}
