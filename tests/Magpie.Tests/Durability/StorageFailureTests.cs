using System.Diagnostics;
using System.Net;
using System.Text.Json;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Durability;

/// <summary>
/// A real full disk and a real read-only filesystem: a small tmpfs mounted for the test (the test machines run as root;
/// without mount rights the test fails, it does not skip). Full: 507 with a problem body, nothing of the write kept,
/// /readyz 503, and writes back by themselves once space returns. Read-only, a file, or full at start: one line, exit 1.
/// </summary>
public sealed class StorageFailureTests : IAsyncLifetime
{
    private readonly string _mount = Directory.CreateTempSubdirectory("magpie-tmpfs-").FullName;

    public async Task InitializeAsync() => await Run("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", _mount);

    public async Task DisposeAsync()
    {
        await Run("umount", _mount);
        Directory.Delete(_mount);
    }

    [Fact]
    public async Task A_full_disk_answers_507_keeps_no_trace_of_the_write_and_writes_resume_when_space_returns()
    {
        await using var magpie = await MagpieProcess.StartAsync(dataDir: Path.Combine(_mount, "data"),
            environment: new() { ["MAGPIE__MINFREEDISKMEGABYTES"] = "4" });
        Assert.Equal(HttpStatusCode.Created, (await magpie.Http.PutAsync("things/before", """{"a":1}""")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await magpie.Http.GetAsync("readyz")).StatusCode);
        var documents = (await magpie.StatsAsync()).GetProperty("documents").GetInt64();

        // Another program fills the disk.
        var filler = Path.Combine(_mount, "filler");
        await using (var fill = File.OpenWrite(filler))
        {
            var block = new byte[1 << 20];
            try { while (true) await fill.WriteAsync(block); }
            catch (IOException) { }
        }

        await HttpJson.AssertProblem(await magpie.Http.PutAsync("things/during", """{"a":2}"""), HttpStatusCode.InsufficientStorage, "free space and retry");
        await HttpJson.AssertProblem(await magpie.Http.BulkPutAsync([("things/bulk", """{"a":3}""")]), HttpStatusCode.InsufficientStorage, "bytes free");
        Assert.Equal(HttpStatusCode.NotFound, (await magpie.Http.GetAsync("docs/things/during")).StatusCode);
        Assert.Equal(documents, (await magpie.StatsAsync()).GetProperty("documents").GetInt64());
        var notReady = await magpie.Http.GetAsync("readyz");
        Assert.Equal(HttpStatusCode.ServiceUnavailable, notReady.StatusCode);
        Assert.False((await notReady.JsonAsync()).GetProperty("checks").GetProperty("store").GetProperty("ready").GetBoolean());

        File.Delete(filler);
        Assert.Equal(HttpStatusCode.Created, (await magpie.Http.PutAsync("things/after", """{"a":4}""")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await magpie.Http.GetAsync("readyz")).StatusCode);
        Assert.Equal(documents + 1, (await magpie.StatsAsync()).GetProperty("documents").GetInt64());
        Assert.Equal(1, (await (await magpie.Http.GetAsync("docs/things/before")).JsonAsync()).GetProperty("a").GetInt32());
    }

    [Fact]
    public async Task A_data_dir_that_is_read_only_a_file_or_full_stops_the_start_with_one_line()
    {
        var data = Path.Combine(_mount, "data");
        // A store that existed, on a filesystem remounted read-only.
        await using (var magpie = await MagpieProcess.StartAsync(dataDir: data, environment: new() { ["MAGPIE__MINFREEDISKMEGABYTES"] = "4" }))
            Assert.Equal(HttpStatusCode.Created, (await magpie.Http.PutAsync("things/1", "{}")).StatusCode);
        await Run("mount", "-o", "remount,ro", _mount);
        try { await AssertRefusedAsync(data, "Read-only file system"); }
        finally { await Run("mount", "-o", "remount,rw", _mount); }

        var file = Path.Combine(_mount, "a-file");
        await File.WriteAllTextAsync(file, "x");
        await AssertRefusedAsync(file, "is a file, not a directory");

        // Full: less free than the reserve (64 MB by default on a 48 MB disk).
        await AssertRefusedAsync(Path.Combine(_mount, "new"), "kept in reserve");
    }

    private static async Task AssertRefusedAsync(string dataDir, string reason)
    {
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromMinutes(1), "run", "--data-dir", dataDir, "--http-port", FreePort.Next().ToString(), "--pg-port", "-1");
        Assert.NotEqual(0, exit);
        var line = Assert.Single(output.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries));
        Assert.StartsWith("magpie: module 'documents' can't start: cannot use the data directory", line);
        Assert.Contains(reason, line);
    }

    private static async Task Run(string file, params string[] args)
    {
        var psi = new ProcessStartInfo(file) { RedirectStandardError = true, UseShellExecute = false };
        foreach (var a in args) psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var error = await p.StandardError.ReadToEndAsync();
        await p.WaitForExitAsync();
        Assert.True(p.ExitCode == 0, $"{file} {string.Join(' ', args)}: {error}");
    }
}
