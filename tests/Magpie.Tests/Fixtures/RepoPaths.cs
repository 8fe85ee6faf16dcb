namespace Magpie.Tests.Fixtures;

public static class RepoPaths
{
    public static string Root { get; } = FindRoot();

    /// <summary>`../shared` beside the checkout (CI and every session have it).</summary>
    public static string Shared => Path.GetFullPath(Path.Combine(Root, "..", "shared"));

    public static string StackExchangeSample => Path.Combine(Shared, "data", "stackexchange-history-meta");

    /// <summary>The built `magpie` executable (magpie.dll), in the configuration the tests were built in.</summary>
    public static string MagpieDll
    {
        get
        {
            var config = AppContext.BaseDirectory.Contains($"{Path.DirectorySeparatorChar}Release{Path.DirectorySeparatorChar}") ? "Release" : "Debug";
            var path = Path.Combine(Root, "magpie", "bin", config, "net10.0", "magpie.dll");
            return File.Exists(path) ? path : throw new FileNotFoundException($"magpie is not built: {path}");
        }
    }

    private static string FindRoot()
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir is not null; dir = dir.Parent)
            if (File.Exists(Path.Combine(dir.FullName, "Magpie.sln"))) return dir.FullName;
        throw new InvalidOperationException("can't find the repository root (Magpie.sln) above " + AppContext.BaseDirectory);
    }
}
