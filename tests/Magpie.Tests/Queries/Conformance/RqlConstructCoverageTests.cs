using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Queries.Conformance;

/// <summary>
/// Every word of RQL the parser accepts (its keywords, functions and operators, read from its source so a new one cannot slip
/// in unnoticed) is sent by some test in a query: one whose answer a test computes from the data, or one a test expects
/// refused. A construct no test sends could answer anything.
/// </summary>
[Trait("Category", "Fast")]
public sealed partial class RqlConstructCoverageTests
{
    private static readonly string Parser = File.ReadAllText(Path.Combine(RepoPaths.Root, "query-api", "Magpie.Query", "Rql", "RqlParser.cs"));

    /// <summary>Words the parser compares tokens with (<c>Current.Is("where")</c>) and the functions of its switch (<c>"search" =&gt;</c>).</summary>
    public static IEnumerable<object[]> Words() =>
        IsWord().Matches(Parser).Select(m => m.Groups[1].Value)
            .Concat(FunctionArm().Matches(Parser).Select(m => m.Groups[1].Value))
            .Concat(["key", "count", "sum", "getMetadata", "==", "!=", "<=", ">=", "//", "/*"])
            .Distinct(StringComparer.OrdinalIgnoreCase).Order(StringComparer.Ordinal).Select(w => new object[] { w });

    /// <summary>The RQL the tests send: string literals of the test sources that hold a <c>from</c> clause (or follow the static index's <c>{S}</c>).</summary>
    private static readonly List<string> Sent = Directory.EnumerateFiles(Path.Combine(RepoPaths.Root, "tests", "Magpie.Tests"), "*.cs", SearchOption.AllDirectories)
        .Where(f => !f.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}") && !f.EndsWith(nameof(RqlConstructCoverageTests) + ".cs", StringComparison.Ordinal))
        .SelectMany(f => File.ReadAllText(f).Split('\n'))
        .Where(line => Regex.IsMatch(line, @"\bfrom\s+(index\b|[""'@A-Za-z])|\{S\} (where|order|select)", RegexOptions.IgnoreCase))
        .ToList();

    [Theory]
    [MemberData(nameof(Words))]
    public void Every_construct_the_parser_accepts_is_sent_by_a_test(string word)
    {
        var pattern = char.IsLetter(word[0]) ? $@"\b{Regex.Escape(word)}\b" : Regex.Escape(word);
        Assert.True(Sent.Any(line => Regex.IsMatch(line, pattern, RegexOptions.IgnoreCase)),
            $"no test sends a query with '{word}': add one whose answer is computed from the data, or one expecting it refused");
    }

    [GeneratedRegex("""\.Is\("([A-Za-z.]+)"\)""")]
    private static partial Regex IsWord();

    [GeneratedRegex("""^\s*"([a-z.]+)" =>""", RegexOptions.Multiline)]
    private static partial Regex FunctionArm();
}
