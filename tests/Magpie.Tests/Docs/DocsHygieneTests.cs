using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Docs;

/// <summary>
/// The pages say what is true now: history belongs to git. BENCHMARKS.md holds one current figure per benchmark (it grew
/// to 45 KB of superseded runs twice), and no page or product comment says "issue N" or when something happened.
/// </summary>
[Trait("Category", "Fast")]
public sealed partial class DocsHygieneTests
{
    private static IEnumerable<string> Pages() =>
        Directory.GetFiles(Path.Combine(RepoPaths.Root, "docs"), "*.md").Append(Path.Combine(RepoPaths.Root, "README.md"));

    /// <summary>The folders of the product and its benchmarks (tests may name the issue a case came from).</summary>
    private static IEnumerable<string> ProductSources() =>
        new[] { "common", "ingest", "indexer", "query-api", "etl-sinks", "producers", "magpie", "bench" }
            .SelectMany(d => Directory.EnumerateFiles(Path.Combine(RepoPaths.Root, d), "*.*", SearchOption.AllDirectories))
            .Where(f => f.EndsWith(".cs") || f.EndsWith(".sh") || f.EndsWith(".js"))
            .Where(f => !f.Contains($"{Path.DirectorySeparatorChar}bin{Path.DirectorySeparatorChar}") && !f.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}")
                        && !f.Contains("node_modules"));

    [Fact]
    public void The_benchmarks_page_stays_under_25_KB()
    {
        var bytes = new FileInfo(Path.Combine(RepoPaths.Root, "docs", "BENCHMARKS.md")).Length;
        Assert.True(bytes <= 25_000, $"docs/BENCHMARKS.md is {bytes:N0} bytes: keep one current figure per benchmark, its command, target and last profile; history is in git");
    }

    [Fact]
    public void No_page_names_an_issue_or_dates_its_prose()
    {
        var found = new List<string>();
        foreach (var page in Pages())
        {
            // Dates inside code (a query's literal, a sample's timestamp) are data, not a when.
            var prose = CodeSpan().Replace(CodeBlock().Replace(File.ReadAllText(page), ""), "");
            found.AddRange(IssueReference().Matches(prose).Concat(Date().Matches(prose)).Select(m => $"{Path.GetFileName(page)}: {m.Value}"));
        }
        Assert.Empty(found);
    }

    [Fact]
    public void No_product_comment_names_an_issue_or_a_day_of_the_projects_life()
    {
        var found = new List<string>();
        foreach (var file in ProductSources())
            foreach (var (line, n) in File.ReadLines(file).Select((l, i) => (l, i + 1)))
            {
                var comment = line.IndexOf("//", StringComparison.Ordinal) is var at and >= 0 ? line[at..] : line.TrimStart().StartsWith('#') ? line : null;
                if (comment is not null && (IssueReference().IsMatch(comment) || ProjectDate().IsMatch(comment)))
                    found.Add($"{Path.GetRelativePath(RepoPaths.Root, file)}:{n}: {comment.Trim()}");
            }
        Assert.Empty(found);
    }

    [GeneratedRegex(@"\b[Ii]ssues? #?\d+")]
    private static partial Regex IssueReference();

    [GeneratedRegex(@"\b(19|20)\d\d-[01]\d-[0-3]\d\b")]
    private static partial Regex Date();

    /// <summary>Days from the project's start on: a "measured on" or "fixed on" (facts about other dates, such as PostgreSQL's
    /// epoch of 2000-01-01 or a sample key, stay).</summary>
    [GeneratedRegex(@"\b202[5-9]-[01]\d-[0-3]\d\b")]
    private static partial Regex ProjectDate();

    [GeneratedRegex(@"```.*?```", RegexOptions.Singleline)]
    private static partial Regex CodeBlock();

    [GeneratedRegex(@"`[^`\n]*`")]
    private static partial Regex CodeSpan();
}
