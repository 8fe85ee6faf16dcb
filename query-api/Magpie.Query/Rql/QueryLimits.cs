namespace Magpie.Query.Rql;

/// <summary>
/// What one query may ask, RQL and SQL alike. The parsers check these before anything recursive or costly runs, so no
/// query text can exhaust the stack (a 20,000-term <c>or</c>, 100,000 nested parentheses) or make the engine build an
/// unbounded query; past a limit the query is refused (400, or SQLSTATE 54001) naming it.
/// </summary>
public static class QueryLimits
{
    /// <summary>Characters of query text.</summary>
    public const int MaxQueryChars = 256 * 1024;

    /// <summary>Nested parentheses, <c>not</c>s and function arguments.</summary>
    public const int MaxNesting = 64;

    /// <summary>Conditions in a <c>where</c> (Lucene's own default limit of boolean clauses).</summary>
    public const int MaxClauses = 1024;

    /// <summary>Values in one <c>in (…)</c> list.</summary>
    public const int MaxInValues = 1024;

    /// <summary><c>load … as …</c> clauses in a query.</summary>
    public const int MaxLoads = 16;

    /// <summary>Documents loaded for one result (a load of an array of ids counts each), by <c>load</c> and by <c>load()</c> in a projection.</summary>
    public const int MaxLoadedPerResult = 64;

    /// <summary><c>include</c> paths in a query.</summary>
    public const int MaxIncludePaths = 16;

    /// <summary><c>suggest(…)</c> in a query.</summary>
    public const int MaxSuggestions = 16;

    /// <summary><c>highlight(…)</c> includes in a query.</summary>
    public const int MaxHighlights = 8;

    /// <summary>Documents included beside one page.</summary>
    public const int MaxIncludedPerPage = 4096;

    /// <summary>Terms (columns, literals, calls) in one SQL statement: arithmetic chains count too.</summary>
    public const int MaxSqlTerms = 4 * MaxClauses;

    public static string TooLong(int chars) => $"the query is {chars:N0} characters long; the limit is {MaxQueryChars:N0}";
    public const string TooDeep = "the query nests parentheses, not or function calls more than 64 levels deep (the limit)";
    public const string TooManyClauses = "the query has more than 1,024 conditions (the limit); use in (…) or a facet instead";
    public const string TooManyInValues = "an in (…) list has more than 1,024 values (the limit)";
    public const string TooManyTerms = "the statement has more than 4,096 terms (the limit)";
}
