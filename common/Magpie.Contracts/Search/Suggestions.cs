namespace Magpie.Contracts.Search;

/// <summary>How a candidate's closeness to the word asked is measured (RavenDB's <c>Distance</c> option).</summary>
public enum SuggestDistance { Levenshtein, JaroWinkler }

/// <summary>
/// <c>suggest(Field, 'word')</c>: the field's indexed terms within <see cref="MaxEdits"/> edits of <see cref="Term"/> (Levenshtein, a
/// transposition one edit) whose similarity by <see cref="Distance"/> is at least <see cref="Accuracy"/> (0–1).
/// </summary>
public sealed record SuggestSpec(string Field, string Term, int MaxEdits, float Accuracy, SuggestDistance Distance)
{
    public const int MaxTermChars = 256;

    /// <summary>Candidates one shard gives for one word (the closest of them when there are more).</summary>
    public const int MaxCandidates = 1_024;
}

/// <summary>An indexed term close to the word asked: how many entries hold it, and its similarity to the word (1 = the same).</summary>
public sealed record TermSuggestion(string Term, long Entries, float Similarity);
