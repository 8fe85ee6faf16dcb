namespace Magpie.Contracts.Search;

/// <summary>
/// <c>include highlight(Field, fragmentLength, fragmentCount[, options])</c>: up to <see cref="FragmentCount"/> fragments of about
/// <see cref="FragmentLength"/> characters of the field's text, the words the query matched marked with the tags (the first pre
/// tag for the first distinct word, the second for the second, …, round).
/// </summary>
public sealed record HighlightSpec(string Field, int FragmentLength, int FragmentCount, IReadOnlyList<string> PreTags, IReadOnlyList<string> PostTags)
{
    public const int MinFragmentLength = 18, MaxFragmentLength = 4_096, MaxFragments = 32, MaxTags = 16, MaxTagLength = 256;

    /// <summary>Characters of one value the highlighter reads (the rest of a longer text is not looked at).</summary>
    public const int MaxTextChars = 256 * 1024;

    public static IReadOnlyList<string> DefaultPreTags { get; } = ["<b>"];
    public static IReadOnlyList<string> DefaultPostTags { get; } = ["</b>"];
}
