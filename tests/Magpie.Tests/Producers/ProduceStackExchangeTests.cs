using System.Net.Http.Json;
using System.Text.Json;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Producers;

/// <summary>`magpie produce stackexchange` on the real sample dump, over HTTP and over Kafka.</summary>
[Collection(KafkaCollection.Name)]
public sealed class ProduceStackExchangeTests(KafkaFixture kafka)
{
    private static readonly StackExchangeXml Xml = new(RepoPaths.StackExchangeSample);

    [Fact]
    public async Task Import_over_http_gives_the_dumps_users_and_posts_with_badges_and_comments_merged()
    {
        await using var magpie = await MagpieProcess.StartAsync();
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5),
            "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--url", magpie.BaseUrl.ToString());
        Assert.True(exit == 0, output);
        await AssertImported(magpie);
    }

    [Fact]
    public async Task Import_over_kafka_lands_the_same_documents()
    {
        await using var magpie = await MagpieProcess.StartAsync(kafka.Broker.BootstrapServers);
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5),
            "produce", "stackexchange", "--dir", RepoPaths.StackExchangeSample, "--kafka", kafka.Broker.BootstrapServers);
        Assert.True(exit == 0, output);
        // The last phase's writes land asynchronously: wait for the comment count to settle.
        var expected = Xml.CommentsPerPost().Values.Sum();
        var deadline = DateTime.UtcNow.AddSeconds(90);
        while (DateTime.UtcNow < deadline && await SumArrays(magpie, "posts", "Comments") < expected) await Task.Delay(1000);
        await AssertImported(magpie);
    }

    [Fact]
    public async Task A_folder_with_only_some_files_imports_what_it_has_and_an_empty_one_is_refused_in_one_line()
    {
        var partial = Directory.CreateTempSubdirectory("magpie-dump-").FullName;
        var empty = Directory.CreateTempSubdirectory("magpie-dump-").FullName;
        try
        {
            foreach (var f in new[] { "Posts.xml", "Comments.xml" }) File.Copy(Path.Combine(RepoPaths.StackExchangeSample, f), Path.Combine(partial, f));
            await using var magpie = await MagpieProcess.StartAsync();
            var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(5), "produce", "stackexchange", "--dir", partial, "--url", magpie.BaseUrl.ToString());
            Assert.True(exit == 0, output);
            var collections = (await magpie.StatsAsync()).GetProperty("collections");
            Assert.Equal(Xml.Posts.Count(), collections.GetProperty("posts").GetInt64());
            Assert.False(collections.TryGetProperty("users", out _));
            Assert.Equal(Xml.CommentsPerPost().Values.Sum(), await SumArrays(magpie, "posts", "Comments"));

            (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "produce", "stackexchange", "--dir", empty, "--url", magpie.BaseUrl.ToString());
            Assert.Equal(2, exit);
            Assert.Equal($"magpie produce stackexchange: not a Stack Exchange dump folder: neither Users.xml nor Posts.xml is in {empty}", output.Trim());
        }
        finally
        {
            Directory.Delete(partial, recursive: true);
            Directory.Delete(empty);
        }
    }

    private static async Task AssertImported(MagpieProcess magpie)
    {
        var stats = await magpie.StatsAsync();
        var collections = stats.GetProperty("collections");
        Assert.Equal(Xml.Users.Count, collections.GetProperty("users").GetInt64());
        Assert.Equal(Xml.Posts.Count, collections.GetProperty("posts").GetInt64());

        var badges = await ArraySizes(magpie, "users", "Badges");
        var comments = await ArraySizes(magpie, "posts", "Comments");
        Assert.Equal(Xml.BadgesPerUser().Where(kv => kv.Value > 0).OrderBy(kv => kv.Key), badges.Where(kv => kv.Value > 0).OrderBy(kv => kv.Key));
        Assert.Equal(Xml.CommentsPerPost().Where(kv => kv.Value > 0).OrderBy(kv => kv.Key), comments.Where(kv => kv.Value > 0).OrderBy(kv => kv.Key));

        // Field fidelity on one real user: numbers stay numbers, HTML is decoded text, badges carry their names.
        var top = Xml.BadgesPerUser().MaxBy(kv => kv.Value).Key;
        var user = await magpie.Http.GetFromJsonAsync<JsonElement>($"docs/{top}");
        var xmlUser = Xml.Users.Single(u => "users/" + (string)u.Attribute("Id")! == top);
        Assert.Equal((long)xmlUser.Attribute("Reputation")!, user.GetProperty("Reputation").GetInt64());
        Assert.Equal((string)xmlUser.Attribute("DisplayName")!, user.GetProperty("DisplayName").GetString());
        var xmlBadgeNames = Xml.Badges.Where(b => "users/" + (string)b.Attribute("UserId")! == top).Select(b => (string)b.Attribute("Name")!).Order();
        Assert.Equal(xmlBadgeNames, user.GetProperty("Badges").EnumerateArray().Select(b => b.GetProperty("Name").GetString()!).Order());
        // Badges are appended by PATCH: the user's own fields and every badge's date stay the dump's text (".720" keeps its zero, no time zone added).
        Assert.Equal((string)xmlUser.Attribute("CreationDate")!, user.GetProperty("CreationDate").GetString());
        var xmlBadgeDates = Xml.Badges.Where(b => "users/" + (string)b.Attribute("UserId")! == top).Select(b => (string)b.Attribute("Date")!).Order(StringComparer.Ordinal);
        Assert.Equal(xmlBadgeDates, user.GetProperty("Badges").EnumerateArray().Select(b => b.GetProperty("Date").GetString()!).Order(StringComparer.Ordinal));
    }

    private static async Task<long> SumArrays(MagpieProcess magpie, string collection, string array) =>
        (await ArraySizes(magpie, collection, array)).Values.Sum();

    /// <summary>Walks a whole collection with the browse cursor and returns each document's array length.</summary>
    private static async Task<Dictionary<string, int>> ArraySizes(MagpieProcess magpie, string collection, string array)
    {
        var sizes = new Dictionary<string, int>();
        string? cursor = null;
        var pages = 0;
        do
        {
            Assert.True(++pages < 1000, "browsing did not end");
            var page = await magpie.Http.GetFromJsonAsync<JsonElement>($"docs?collection={collection}&pageSize=1024" + (cursor is null ? "" : $"&cursor={cursor}"));
            foreach (var doc in page.GetProperty("results").EnumerateArray())
                sizes[doc.GetProperty("@metadata").GetProperty("@id").GetString()!] = doc.GetProperty(array).GetArrayLength();
            cursor = page.GetProperty("nextCursor").ValueKind == JsonValueKind.String ? page.GetProperty("nextCursor").GetString() : null;
        } while (cursor is not null);
        return sizes;
    }
}
