using System.Diagnostics;
using System.Net;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Operations;

/// <summary>
/// docs/OPERATIONS.md's backup: a data directory copied while Magpie is stopped (after kill -9, too) restores the documents,
/// an index's answers and the API keys; a copy without the index folders rebuilds them to the same answers.
/// </summary>
public sealed class BackupRestoreTests
{
    private const string Index = """{ "maps": ["map('Posts', p => ({ Tags: p.Tags, Score: p.Score }))"] }""";

    private static async Task<string> AnswersAsync(HttpClient http) =>
        string.Join(';', new[] { "Tags = 'kafka'", "Score >= 100", "Tags = 'c#' and Score < 10" }.Select(where =>
        {
            var page = http.QueryNonStaleAsync($"from index 'Posts/Backup' where {where}").GetAwaiter().GetResult();
            return $"{where}: {page.GetProperty("totalResults").GetInt32()}";
        }));

    private static void Copy(string from, string to)
    {
        using var cp = Process.Start(new ProcessStartInfo("cp", ["-a", from, to]) { RedirectStandardError = true })!;
        var error = cp.StandardError.ReadToEnd();
        cp.WaitForExit();
        Assert.True(cp.ExitCode == 0, error);
    }

    [Fact]
    public async Task A_data_directory_copied_while_stopped_restores_documents_indexes_and_keys()
    {
        var dataDir = Directory.CreateTempSubdirectory("magpie-backup-").FullName;
        var key = await TestKeys.CreateAsync(dataDir, "admin", "ops");
        string answers, user;
        var backup = dataDir + "-copy";
        var withoutIndexes = dataDir + "-no-indexes";
        await using (var magpie = await MagpieProcess.StartAsync(dataDir: dataDir))
        {
            magpie.ApiKey = key;
            var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(2), new Dictionary<string, string> { ["MAGPIE_API_KEY"] = key },
                "produce", "synthetic", "--count", "3000", "--url", magpie.BaseUrl.ToString());
            Assert.True(exit == 0, output);
            Assert.Equal(HttpStatusCode.Created, (await magpie.Http.PutAsync("users/ada", """{"Name":"Ada","Score":1.50}""")).StatusCode);
            await magpie.Http.PutIndexAsync("Posts/Backup", Index);
            answers = await AnswersAsync(magpie.Http);
            user = await magpie.Http.GetStringAsync("docs/users/ada");
            magpie.Crash();   // kill -9: every acknowledged write is in the log's last commit
            Copy(dataDir, backup);
            Copy(dataDir, withoutIndexes);
        }
        foreach (var folder in Directory.GetDirectories(Path.Combine(withoutIndexes, "indexes"))) Directory.Delete(folder, recursive: true);

        foreach (var restored in new[] { backup, withoutIndexes })
        {
            await using var magpie = await MagpieProcess.StartAsync(dataDir: restored);
            // The keys came with the copy: without one, a request is refused; with it, served.
            Assert.Equal(HttpStatusCode.Unauthorized, (await magpie.Http.GetAsync("docs/users/ada")).StatusCode);
            magpie.ApiKey = key;
            Assert.Equal(user, await magpie.Http.GetStringAsync("docs/users/ada"));
            Assert.Equal(3001, (await magpie.StatsAsync()).GetProperty("documents").GetInt32());
            Assert.Equal(answers, await AnswersAsync(magpie.Http));
        }
        foreach (var dir in new[] { dataDir, backup, withoutIndexes }.Where(Directory.Exists)) Directory.Delete(dir, recursive: true);
    }
}
