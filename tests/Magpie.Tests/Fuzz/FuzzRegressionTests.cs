using Magpie.Fuzz;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Fuzz;

/// <summary>
/// Every seed, every input the fuzzers kept (tests/Magpie.Fuzz/corpus) and every crash they found (crashes), per target,
/// replayed through the same target functions: each returns or throws only its parser's own client error. A crash, once
/// fixed, stays fixed.
/// </summary>
[Trait("Category", "Fast")]
public sealed class FuzzRegressionTests
{
    public static TheoryData<string> Targets() => [.. FuzzTargets.All.Keys];

    [Theory]
    [MemberData(nameof(Targets))]
    public void Every_kept_input_is_answered_without_an_unexpected_exception(string target)
    {
        var files = new[] { "corpus", "crashes" }
            .Select(kind => Path.Combine(RepoPaths.Root, "tests", "Magpie.Fuzz", kind, target))
            .Where(Directory.Exists)
            .SelectMany(Directory.EnumerateFiles)
            .Order(StringComparer.Ordinal).ToList();
        Assert.NotEmpty(files);
        var failures = new List<string>();
        foreach (var file in files)
        {
            try { FuzzTargets.All[target](File.ReadAllBytes(file)); }
            catch (Exception e) { failures.Add($"{Path.GetRelativePath(RepoPaths.Root, file)}: {e.GetType().Name}: {e.Message}"); }
        }
        Assert.True(failures.Count == 0, $"{failures.Count} of {files.Count} inputs failed:\n{string.Join('\n', failures.Take(20))}");
    }

    [Fact]
    public void The_crashes_the_fuzzers_found_are_kept()
    {
        foreach (var target in FuzzTargets.All.Keys)
            Assert.NotEmpty(Directory.EnumerateFiles(Path.Combine(RepoPaths.Root, "tests", "Magpie.Fuzz", "crashes", target)));
    }
}
