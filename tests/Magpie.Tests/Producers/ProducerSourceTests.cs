using System.Text.Json;
using Magpie.Producers;
using Magpie.Producers.Sources;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Producers;

public sealed class ProducerSourceTests
{
    [Fact]
    public void Synthetic_posts_are_deterministic_per_seed_and_about_a_kilobyte()
    {
        var a = SyntheticPosts.Generate(200, seed: 7).ToList();
        var b = SyntheticPosts.Generate(200, seed: 7).ToList();
        var c = SyntheticPosts.Generate(200, seed: 8).ToList();
        Assert.Equal(a.Select(w => Convert.ToBase64String(w.Body!)), b.Select(w => Convert.ToBase64String(w.Body!)));
        Assert.NotEqual(a.Select(w => Convert.ToBase64String(w.Body!)), c.Select(w => Convert.ToBase64String(w.Body!)));
        Assert.Equal("posts/1", a[0].Id);
        Assert.InRange(a.Average(w => w.Body!.Length), 800, 1300);
        var post = JsonDocument.Parse(a[0].Body!).RootElement;
        Assert.Equal(JsonValueKind.Array, post.GetProperty("Tags").ValueKind);
        Assert.Equal(1, post.GetProperty("Id").GetInt64());
    }

    [Fact]
    public void Ndjson_takes_ids_from_metadata_or_the_id_field_and_names_the_bad_line()
    {
        var path = Path.GetTempFileName();
        File.WriteAllLines(path, ["""{"id":"things/1","a":1}""", "", """{"@metadata":{"@id":"things/2"},"a":2}""", """{"a":3}"""]);
        var writes = NdjsonSource.Read(path).Take(2).ToList();
        Assert.Equal(["things/1", "things/2"], writes.Select(w => w.Id));
        var error = Assert.Throws<FormatException>(() => NdjsonSource.Read(path).ToList());
        Assert.Contains(":4:", error.Message);
    }

    [Fact]
    public async Task Ndjson_and_synthetic_commands_publish_over_http()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var path = Path.GetTempFileName();
        File.WriteAllLines(path, Enumerable.Range(1, 300).Select(i => $$"""{"id":"lines/{{i}}","n":{{i}}}"""));
        var ndjson = await MagpieCli.RunAsync(TimeSpan.FromMinutes(2), "produce", "ndjson", path, "--url", magpie.BaseUrl.ToString());
        Assert.True(ndjson.ExitCode == 0, ndjson.Output);
        var synthetic = await MagpieCli.RunAsync(TimeSpan.FromMinutes(2), "produce", "synthetic", "--count", "1000", "--seed", "3", "--url", magpie.BaseUrl.ToString());
        Assert.True(synthetic.ExitCode == 0, synthetic.Output);
        var collections = (await magpie.StatsAsync()).GetProperty("collections");
        Assert.Equal(300, collections.GetProperty("lines").GetInt64());
        Assert.Equal(1000, collections.GetProperty("posts").GetInt64());
    }

    [Fact]
    public async Task Produce_needs_exactly_one_destination()
    {
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "produce", "synthetic", "--count", "1");
        Assert.NotEqual(0, exit);
        Assert.Contains("--url or --kafka", output);
    }
}
