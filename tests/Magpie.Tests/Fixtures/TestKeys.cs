namespace Magpie.Tests.Fixtures;

/// <summary>API keys made the way an operator makes them: `magpie keys create` on the data directory.</summary>
public static class TestKeys
{
    public static async Task<string> CreateAsync(string dataDir, string role, string name)
    {
        var file = Path.Combine(Path.GetTempPath(), $"magpie-key-{Guid.NewGuid():N}");
        var (exit, output) = await MagpieCli.RunAsync(TimeSpan.FromSeconds(60), "keys", "create", "--data-dir", dataDir, "--role", role, "--name", name, "--out", file);
        Assert.True(exit == 0, output);
        var key = (await File.ReadAllTextAsync(file)).Trim();
        File.Delete(file);
        return key;
    }
}
