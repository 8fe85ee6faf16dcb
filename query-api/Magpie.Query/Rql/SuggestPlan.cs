using Magpie.Contracts.Search;

namespace Magpie.Query.Rql;

/// <summary>One <c>suggest()</c> planned: what each shard is asked (<see cref="Spec"/>), how many to keep and in which order.</summary>
public sealed record SuggestPlan(SuggestSpec Spec, int PageSize, bool Popularity, string Name)
{
    public SuggestAnswer Answer(IEnumerable<TermSuggestion> shards) => new(Name, PageSize, Popularity, SuggestAnswer.Added(shards));
}

/// <summary>
/// The candidates of one <c>suggest()</c> from some shards, each term once (entries added up: shards hold different documents), with
/// what ordering them needs; owners send them whole and the coordinator adds owners up the same way before ordering and cutting.
/// </summary>
public sealed record SuggestAnswer(string Name, int PageSize, bool Popularity, IReadOnlyList<TermSuggestion> Candidates)
{
    /// <summary>Closest first, then (<see cref="Popularity"/>, RavenDB's default) the terms more entries hold, then by term; the first <see cref="PageSize"/>.</summary>
    public IReadOnlyList<string> Suggestions()
    {
        var ordered = Popularity
            ? Candidates.OrderByDescending(s => s.Similarity).ThenByDescending(s => s.Entries)
            : Candidates.OrderByDescending(s => s.Similarity);
        return ordered.ThenBy(s => s.Term, StringComparer.Ordinal).Take(PageSize).Select(s => s.Term).ToList();
    }

    /// <summary>Owners' answers to the same query added up, suggestion by suggestion.</summary>
    public static IReadOnlyList<SuggestAnswer> Merge(IReadOnlyList<IReadOnlyList<SuggestAnswer>> owners) =>
        owners.Count == 1 ? owners[0] : owners[0].Select((first, i) => first with { Candidates = Added(owners.SelectMany(o => o[i].Candidates)) }).ToList();

    internal static IReadOnlyList<TermSuggestion> Added(IEnumerable<TermSuggestion> candidates) =>
        candidates.GroupBy(s => s.Term, StringComparer.Ordinal).Select(g => new TermSuggestion(g.Key, g.Sum(s => s.Entries), g.Max(s => s.Similarity))).ToList();
}
