using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Etl;
using Magpie.Tests.Sinks;
using Microsoft.Playwright;

namespace Magpie.Tests.Studio;

/// <summary>
/// Hostile strings in every field a user (or a queue's publisher) controls — document ids and collections, field names and
/// values, index error texts, sink message ids and their errors, ETL error texts, subscription queries — render in every Studio
/// page as text: no element of theirs reaches the DOM, no script runs, no Content-Security-Policy violation. A document whose id
/// climbs (<c>../indexes/…</c>, <c>../keys/…</c>) opens and deletes itself only.
/// </summary>
public sealed class StudioHostileInputTests(RabbitMqFixture rabbit) : IClassFixture<RabbitMqFixture>
{
    /// <summary>Markup that would leave a trace if it ever became markup: an element with data-hostile, a script setting __pwned.</summary>
    private static string Payload(string where) =>
        $"x\"'><img data-hostile=\"{where}\" src=y onerror=\"window.__pwned='{where}'\"><script>window.__pwned='{where}'</script>`${{1}}";

    // Collections are what comes before the first '/': this one is markup too, and holds no '/'.
    private const string Collection = "c\"><b data-hostile=\"collection\">bold";

    [Fact]
    public async Task Every_page_renders_hostile_strings_as_text_and_touches_only_their_own_resources()
    {
        // With keys, as a deployment runs: the admin's key sits in Studio's session storage, which is what an injection would read.
        var dataDir = Directory.CreateTempSubdirectory("magpie-studio-hostile-").FullName;
        var admin = await TestKeys.CreateAsync(dataDir, "admin", "ops");
        await TestKeys.CreateAsync(dataDir, "read", "victim");
        await using var magpie = await MagpieProcess.StartAsync(dataDir: dataDir);
        using var http = new HttpClient { BaseAddress = magpie.BaseUrl };
        http.DefaultRequestHeaders.Authorization = new("Bearer", admin);
        var hostileId = $"{Collection}/{Payload("id")}";
        var body = new Dictionary<string, string> { [Payload("field-name")] = Payload("field-value"), ["Text"] = "hostile" };
        Assert.True((await http.PostAsync("bulk_docs", HttpJson.Json(JsonSerializer.Serialize(new object[]
        {
            new { method = "PUT", id = hostileId, document = body },
            new { method = "PUT", id = "../indexes/Victim/Index", document = new { Text = "climbs to an index" } },
            new { method = "PUT", id = "../keys/victim", document = new { Text = "climbs to a key" } },
            new { method = "PUT", id = "..", document = new { Text = "a dot-dot id" } },
        })))).IsSuccessStatusCode);
        await http.PutIndexAsync("Victim/Index", """{ "maps": ["map('notes', n => ({ Text: n.Text }))"] }""");
        // An index whose map fails with a hostile message on the hostile document: the error text is shown on the index page.
        await http.PutIndexAsync("Hostile/Errors", JsonSerializer.Serialize(new
        {
            maps = new[] { $"map({JsonSerializer.Serialize(Collection)}, d => {{ throw new Error({JsonSerializer.Serialize(Payload("index-error"))}); }})" },
        }));
        await http.QueryNonStaleAsync("from index 'Hostile/Errors'");

        // A sink whose publisher picks the message ids: one becomes a document id, one fails with a hostile error text.
        await http.PutConnectionAsync("rabbit", new { type = "rabbitmq", url = rabbit.Broker.Url });
        await using (var publisher = await Publisher.OpenAsync(rabbit.Broker.Url, "hostile-in"))
        {
            await publisher.SendAsync("""{"Text": "from a queue"}""", Payload("message-id"));
            await publisher.SendAsync("""{"fail": true}""", Payload("failing-message-id"));
        }
        await http.PutSinkAsync("hostile", new
        {
            connection = "rabbit", queues = new[] { "hostile-in" },
            script = $"if (this.fail) throw new Error({JsonSerializer.Serialize(Payload("sink-error"))}); put('notes/', {{ Text: this.Text }});",
        });
        await http.WaitForSinkAsync("hostile", s => s.Long("messagesReceived") >= 2, TimeSpan.FromSeconds(60));
        Assert.True((await http.PutAsJsonAsync("etl/tasks/hostile-out", new
        {
            connection = "rabbit", queues = new[] { new { name = "hostile-out", exchange = "Out" } },
            transforms = new[] { new { collections = new[] { "notes" }, script = $"throw new Error({JsonSerializer.Serialize(Payload("etl-error"))});" } },
        })).IsSuccessStatusCode);
        Assert.True((await http.PostAsJsonAsync("subscriptions", new { name = "hostile", query = $"from notes where Text = {JsonSerializer.Serialize(Payload("subscription-query"), new JsonSerializerOptions { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping })}" })).IsSuccessStatusCode);

        var (playwright, browser) = await Chromium.LaunchAsync();
        try
        {
            var context = await browser.NewContextAsync(new BrowserNewContextOptions { ViewportSize = new ViewportSize { Width = 1280, Height = 800 } });
            // Any violation of the page's policy is counted: it would mean markup of the data's reached the DOM.
            await context.AddInitScriptAsync($"sessionStorage.setItem('magpie.key', '{admin}');");
            await context.AddInitScriptAsync("window.__violations = []; addEventListener('securitypolicyviolation', e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));");
            var page = await context.NewPageAsync();
            var requests = new List<string>();
            page.Request += (_, r) => requests.Add($"{r.Method} {r.Url}");
            page.Dialog += async (_, d) => await d.AcceptAsync();
            var studio = new Uri(magpie.BaseUrl, "studio/");
            var response = await page.GotoAsync(studio.ToString());
            Assert.Contains("script-src 'self'", response!.Headers["content-security-policy"]);

            async Task Clean(string where)
            {
                Assert.True(await page.Locator("[data-hostile]").CountAsync() == 0, $"{where}: an element of the data's reached the DOM");
                Assert.True(await page.EvaluateAsync<string?>("window.__pwned ?? null") is null, $"{where}: the data's script ran");
                var violations = await page.EvaluateAsync<string[]>("window.__violations");
                Assert.True(violations.Length == 0, $"{where}: {string.Join("; ", violations)}");
            }

            await StudioFixture.ShotOnFailureAsync(page, "hostile", async () =>
            {
                await page.GotoAsync(studio + "#/overview");
                await Assertions.Expect(page.Locator("#indexes tbody")).ToContainTextAsync("Hostile/Errors");
                await Clean("overview");

                await page.GotoAsync(studio + "#/documents");
                await Assertions.Expect(page.Locator("#collections")).ToContainTextAsync("data-hostile=\"collection\"");
                await page.Locator("#collections a", new() { HasText = "data-hostile" }).ClickAsync();
                await Assertions.Expect(page.Locator("#docs tbody")).ToContainTextAsync("data-hostile=\"id\"");
                await Assertions.Expect(page.Locator("#docs tbody")).ToContainTextAsync("data-hostile=\\\"field-name\\\"");
                await page.Locator("#docs tbody tr").First.ClickAsync();
                await Assertions.Expect(page.Locator("#docId")).ToHaveValueAsync(hostileId);
                await Assertions.Expect(page.Locator("#docJson")).ToHaveValueAsync(new System.Text.RegularExpressions.Regex("field-value"));
                await page.ClickAsync("#revisions");
                await Assertions.Expect(page.Locator("#versions tbody tr")).ToHaveCountAsync(1);
                await Clean("documents");

                await page.GotoAsync(studio + "#/documents/notes");
                await Assertions.Expect(page.Locator("#docs tbody")).ToContainTextAsync("data-hostile=\"message-id\"");
                await Clean("a sink's documents");

                await page.GotoAsync(studio + "#/query");
                await page.FillAsync("#rql", "from @all_docs where Text = 'hostile'");
                await page.PressAsync("#rql", "Control+Enter");
                await Assertions.Expect(page.Locator("table.results a")).ToHaveTextAsync(hostileId);
                await page.ClickAsync("#asJson");
                await Assertions.Expect(page.Locator("#output")).ToContainTextAsync("field-value");
                await page.FillAsync("#rql", "from notes where search(Text, 'queue') select Text include highlight(Text, 18, 1)");
                await page.PressAsync("#rql", "Control+Enter");
                await Clean("query");

                await page.GotoAsync(studio + "#/indexes/Hostile/Errors");
                await Assertions.Expect(page.Locator("#status")).ToContainTextAsync("data-hostile=\"index-error\"", new() { Timeout = 30_000 });
                await Assertions.Expect(page.Locator("#status")).ToContainTextAsync(hostileId);
                await Clean("index errors");

                await page.GotoAsync(studio + "#/etl");
                await Assertions.Expect(page.Locator("#sinks")).ToContainTextAsync("data-hostile=\"sink-error\"", new() { Timeout = 30_000 });
                await Assertions.Expect(page.Locator("#sinks")).ToContainTextAsync("data-hostile=\"failing-message-id\"");
                await Assertions.Expect(page.Locator("#tasks")).ToContainTextAsync("data-hostile=\"etl-error\"", new() { Timeout = 30_000 });
                await Assertions.Expect(page.Locator("#subscriptions")).ToContainTextAsync("<script>window.__pwned='subscription-query'");
                await Clean("etl");

                await page.GotoAsync(studio + "#/keys");
                await Assertions.Expect(page.Locator("#keys")).ToContainTextAsync("victim");
                await Clean("keys");

                // Ids that climb: each opens as the document it is, and "Delete" deletes that document only.
                foreach (var id in new[] { "../indexes/Victim/Index", "../keys/victim", ".." })
                {
                    requests.Clear();
                    await page.GotoAsync(studio + $"#/documents/{Uri.EscapeDataString(DocumentCollection(id))}/{Uri.EscapeDataString(id)}");
                    await Assertions.Expect(page.Locator("#docId")).ToHaveValueAsync(id);
                    await Assertions.Expect(page.Locator("#docJson")).ToHaveValueAsync(new System.Text.RegularExpressions.Regex("climbs|dot-dot"));
                    await page.ClickAsync("#delete");
                    await Assertions.Expect(page.Locator("#editor")).ToBeHiddenAsync();
                    Assert.Equal(System.Net.HttpStatusCode.NotFound, (await http.GetAsync($"docs?id={Uri.EscapeDataString(id)}")).StatusCode);
                    var deletes = requests.Where(r => r.StartsWith("DELETE ")).ToList();
                    Assert.Equal([$"DELETE {new Uri(magpie.BaseUrl, $"docs?id={Uri.EscapeDataString(id)}")}"], deletes);
                }
                Assert.True((await http.GetAsync("indexes/Victim/Index")).IsSuccessStatusCode);
                var keys = await http.GetFromJsonAsync<JsonElement>("keys");
                Assert.Contains(keys.EnumerateArray(), k => k.GetProperty("name").GetString() == "victim");
                await Clean("after the deletes");
            });
        }
        finally
        {
            await browser.DisposeAsync();
            playwright.Dispose();
        }
    }

    private static string DocumentCollection(string id) => id.IndexOf('/') is > 0 and var slash ? id[..slash] : "@empty";
}
