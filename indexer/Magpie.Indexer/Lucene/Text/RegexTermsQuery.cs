using System.Diagnostics;
using System.Text.RegularExpressions;
using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Search;

namespace Magpie.Indexer.Lucene.Text;

/// <summary>
/// <c>regex(Field, '…')</c>: the terms of the field a .NET regular expression finds a match in (case-insensitive: terms are
/// lower-cased), as RavenDB runs it. The pattern is user input, so it runs on .NET's non-backtracking engine where it can
/// (linear in the term) and otherwise with a match timeout, and the whole walk over the terms has a deadline: past either
/// the query is refused, never left running.
/// </summary>
internal sealed class RegexTermsQuery : MultiTermQuery
{
    public const int MaxPatternChars = 1024;
    public static readonly TimeSpan TermTimeout = TimeSpan.FromMilliseconds(100);
    public static readonly TimeSpan WalkTimeout = TimeSpan.FromSeconds(5);

    private readonly Regex _regex;
    private readonly string _pattern;

    public RegexTermsQuery(string field, string pattern) : base(field)
    {
        if (pattern.Length > MaxPatternChars) throw new IndexEngineException($"regex() pattern is longer than {MaxPatternChars:N0} characters");
        _pattern = pattern;
        const RegexOptions options = RegexOptions.IgnoreCase | RegexOptions.CultureInvariant;
        try { _regex = new Regex(pattern, options | RegexOptions.NonBacktracking, TermTimeout); }
        catch (NotSupportedException)   // backreferences, lookarounds, atomic groups: the backtracking engine, under its timeout
        {
            _regex = Compile(pattern, options);
        }
        catch (ArgumentException e) { throw new IndexEngineException($"regex() pattern is not a valid regular expression: {e.Message}"); }
    }

    private static Regex Compile(string pattern, RegexOptions options)
    {
        try { return new Regex(pattern, options, TermTimeout); }
        catch (ArgumentException e) { throw new IndexEngineException($"regex() pattern is not a valid regular expression: {e.Message}"); }
    }

    protected override TermsEnum GetTermsEnum(Terms terms, AttributeSource atts) => new Matching(terms.GetEnumerator(), _regex, _pattern);

    public override string ToString(string field) => $"{Field}:/{_pattern}/";

    public override bool Equals(object? obj) => obj is RegexTermsQuery r && r._pattern == _pattern && base.Equals(obj);

    public override int GetHashCode() => HashCode.Combine(base.GetHashCode(), _pattern);

    private sealed class Matching(TermsEnum terms, Regex regex, string pattern) : FilteredTermsEnum(terms, startWithSeek: false)
    {
        private readonly long _deadline = Stopwatch.GetTimestamp() + (long)(WalkTimeout.TotalSeconds * Stopwatch.Frequency);

        protected override AcceptStatus Accept(BytesRef term)
        {
            if (Stopwatch.GetTimestamp() > _deadline)
                throw new IndexEngineException($"regex() '{Short(pattern)}' took over {WalkTimeout.TotalSeconds:N0} s over the field's terms: narrow it (startsWith, a literal prefix)");
            try { return regex.IsMatch(term.Utf8ToString()) ? AcceptStatus.YES : AcceptStatus.NO; }
            catch (RegexMatchTimeoutException)
            {
                throw new IndexEngineException($"regex() '{Short(pattern)}' took over {TermTimeout.TotalMilliseconds:N0} ms on one term: simplify it");
            }
        }

        private static string Short(string p) => p.Length > 64 ? p[..64] + "…" : p;
    }
}
