using Magpie.Fuzz;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Fuzz;

/// <summary>
/// Every seed and every crash the fuzzers found (tests/Magpie.Fuzz/corpus and crashes, per target), replayed through the
/// same target functions: each returns or throws only its parser's own client error. A crash, once fixed, stays fixed.
/// </summary>
public sealed class FuzzRegressionTests
{
    public static TheoryData<string, string> Inputs()
    {
        var data = new TheoryData<string, string>();
        foreach (var kind in new[] { "corpus", "crashes" })
        foreach (var target in FuzzTargets.All.Keys)
        {
            var dir = Path.Combine(RepoPaths.Root, "tests", "Magpie.Fuzz", kind, target);
            if (!Directory.Exists(dir)) continue;
            foreach (var file in Directory.EnumerateFiles(dir).Order(StringComparer.Ordinal))
                data.Add(target, Path.GetRelativePath(RepoPaths.Root, file));
        }
        return data;
    }

    [Fact]
    public void Every_target_has_seeds_and_the_crashes_found_are_kept()
    {
        foreach (var target in FuzzTargets.All.Keys)
            Assert.NotEmpty(Directory.EnumerateFiles(Path.Combine(RepoPaths.Root, "tests", "Magpie.Fuzz", "corpus", target)));
        Assert.NotEmpty(Directory.EnumerateFiles(Path.Combine(RepoPaths.Root, "tests", "Magpie.Fuzz", "crashes", "rql")));
    }

    [Theory]
    [MemberData(nameof(Inputs))]
    public void The_input_is_answered_without_an_unexpected_exception(string target, string file) =>
        FuzzTargets.All[target](File.ReadAllBytes(Path.Combine(RepoPaths.Root, file)));
}
