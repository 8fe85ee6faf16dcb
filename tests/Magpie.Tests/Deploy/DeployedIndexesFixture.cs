using System.Globalization;
using System.Net;
using System.Net.Http.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using Magpie.Tests.Producers;

namespace Magpie.Tests.Deploy;

/// <summary>
/// A magpie process holding the Stack Exchange sample with the indexes of <c>deploy/indexes</c> defined (file name = index
/// name), as compose's seed service defines them; and the sample's posts read straight from Posts.xml for expectations.
/// </summary>
public sealed class DeployedIndexesFixture : IAsyncLifetime
{
    public static string IndexesDir => Path.Combine(RepoPaths.Root, "deploy", "indexes");

    public MagpieProcess Magpie { get; private set; } = null!;

    public List<Post> Posts { get; } = new StackExchangeXml(RepoPaths.StackExchangeSample).Posts.Select(p => new Post(
        (long)p.Attribute("PostTypeId")!, (long)p.Attribute("Score")!, (string?)p.Attribute("Title"),
        DateTime.Parse((string)p.Attribute("CreationDate")!, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal),
        ((string?)p.Attribute("Tags") ?? "").Trim('<', '>').Split("><", StringSplitOptions.RemoveEmptyEntries))).ToList();

    public sealed record Post(long Type, long Score, string? Title, DateTime Created, string[] Tags);

    public async Task InitializeAsync()
    {
        Magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", Magpie.BaseUrl.ToString());
        if (exit != 0) throw new InvalidOperationException(output);
        await DefineAsync(Magpie.Http);
        foreach (var name in IndexNames())
        {
            var wait = await Magpie.Http.PostAsJsonAsync("queries", new { query = $"from index '{name}'", pageSize = 1, waitForNonStaleResults = true, timeoutMs = 60_000 });
            if (!wait.IsSuccessStatusCode) throw new InvalidOperationException(await wait.Content.ReadAsStringAsync());
        }
    }

    public static IEnumerable<string> IndexNames() => Directory.GetFiles(IndexesDir, "*.json").Select(Path.GetFileNameWithoutExtension).OfType<string>().Order();

    /// <summary>What compose's seed service does: PUT each file's definition as /indexes/{file name}.</summary>
    public static async Task DefineAsync(HttpClient http)
    {
        foreach (var name in IndexNames())
        {
            var put = await http.PutAsync($"indexes/{name}", HttpJson.Json(await File.ReadAllTextAsync(Path.Combine(IndexesDir, name + ".json"))));
            if (put.StatusCode != HttpStatusCode.NoContent) throw new InvalidOperationException($"{name}: {await put.Content.ReadAsStringAsync()}");
        }
    }

    public async Task DisposeAsync() => await Magpie.DisposeAsync();

    public string ConnectionString() =>
        $"Host=127.0.0.1;Port={Magpie.PgPort};Username=grafana;Database=magpie;Pooling=false;Server Compatibility Mode=NoTypeLoading";
}
